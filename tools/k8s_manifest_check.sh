#!/usr/bin/env bash
# Validates the example Kubernetes manifests under deploy/kubernetes/
# against the Kubernetes OpenAPI schema, offline, and proves the
# validation bites.
#
#   tools/k8s_manifest_check.sh
#
# kubeconform (github.com/yannh/kubeconform) normally downloads JSON schemas
# from the web, which our machines cannot reach. So the schemas are made
# here from the OpenAPI document Kubernetes itself publishes
# (api/openapi-spec/swagger.json of the k8s.io/kubernetes module, from the
# Go module proxy) the way kubernetes-json-schema makes its "standalone
# strict" set: every $ref inlined, additionalProperties false on every
# object with declared properties (so a misspelled field is an error),
# int-or-string and resource quantities accept both spellings. kubeconform
# -strict also refuses duplicate keys.
#
# Then a few broken copies of the Job must each be rejected, so a
# validator that accepted everything would fail this check.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
cd "$repo"

k8s_version=v1.34.4
kubeconform_version=v0.8.0
python=/usr/bin/python3
say() { printf 'k8s-manifests: %s\n' "$*" >&2; }
fail() {
  say "FAIL: $*"
  exit 1
}

mkdir -p "$cache/bin"
kubeconform="$cache/bin/kubeconform-$kubeconform_version"
if [[ ! -x $kubeconform ]]; then
  say "building kubeconform $kubeconform_version from the Go module proxy"
  tmpbin=$(mktemp -d)
  GOBIN="$tmpbin" go install "github.com/yannh/kubeconform/cmd/kubeconform@$kubeconform_version"
  mv "$tmpbin/kubeconform" "$kubeconform"
  rmdir "$tmpbin"
fi

schemas="$cache/k8s-schemas-$k8s_version"
if [[ ! -f $schemas/.prepared ]]; then
  say "making JSON schemas from the OpenAPI document of k8s.io/kubernetes@$k8s_version"
  src=$(go mod download -json "k8s.io/kubernetes@$k8s_version" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
  [[ -f $src/api/openapi-spec/swagger.json ]] || fail "k8s.io/kubernetes@$k8s_version has no api/openapi-spec/swagger.json"
  rm -rf "$schemas.tmp"
  mkdir -p "$schemas.tmp"
  "$python" - "$src/api/openapi-spec/swagger.json" "$schemas.tmp" <<'EOF'
import json, os, sys

defs = json.load(open(sys.argv[1]))["definitions"]
QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity"
# Kinds whose schema refers to itself (apiextensions' JSONSchemaProps) cannot
# be inlined; no manifest of ours uses them.
class Recursive(Exception):
    pass

def schema(s, seen):
    if "$ref" in s:
        name = s["$ref"].rsplit("/", 1)[-1]
        if name == QUANTITY:  # "1", 1 and "64Gi" are all quantities
            return {"oneOf": [{"type": "string"}, {"type": "number"}]}
        if name in seen:
            raise Recursive(name)
        return schema(defs[name], seen | {name})
    s = dict(s)
    if s.get("format") == "int-or-string":
        return {"oneOf": [{"type": "string"}, {"type": "integer"}]}
    if "properties" in s:
        s["properties"] = {k: schema(v, seen) for k, v in s["properties"].items()}
        s.setdefault("additionalProperties", False)
    if isinstance(s.get("additionalProperties"), dict):
        s["additionalProperties"] = schema(s["additionalProperties"], seen)
    if isinstance(s.get("items"), dict):
        s["items"] = schema(s["items"], seen)
    for k in ("allOf", "anyOf", "oneOf"):
        if k in s:
            s[k] = [schema(x, seen) for x in s[k]]
    return s

n = skipped = 0
for name, d in sorted(defs.items()):
    for gvk in d.get("x-kubernetes-group-version-kind", []):
        try:
            out = schema(d, {name})
        except Recursive:
            skipped += 1
            continue
        out["$schema"] = "http://json-schema.org/schema#"
        group = gvk["group"].split(".")[0]
        suffix = ("-" + group if group else "") + "-" + gvk["version"]
        path = os.path.join(sys.argv[2], (gvk["kind"] + suffix).lower() + ".json")
        with open(path, "w") as f:
            json.dump(out, f, sort_keys=True)
        n += 1
print("k8s-manifests: %d kind schemas written (%d self-referential ones skipped)" % (n, skipped), file=sys.stderr)
EOF
  touch "$schemas.tmp/.prepared"
  rm -rf "$schemas"
  mv "$schemas.tmp" "$schemas"
fi

validate() {
  "$kubeconform" -strict -summary -kubernetes-version "${k8s_version#v}" \
    -schema-location "$schemas/{{ .ResourceKind }}{{ .KindSuffix }}.json" "$@"
}

mapfile -t manifests < <(git ls-files --cached --others --exclude-standard 'deploy/kubernetes/*.yaml')
((${#manifests[@]})) || fail "no manifests under deploy/kubernetes/"
say "validating ${manifests[*]} against Kubernetes $k8s_version"
validate "${manifests[@]}" >&2 || fail "a manifest does not match the Kubernetes $k8s_version schema"

# Broken copies of the qualification Job: each must be rejected.
job=deploy/kubernetes/qualification-job.yaml
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mutations=(
  's/^  backoffLimit: 0$/  backofLimit: 0/'          # a misspelled field
  's/^  parallelism: 2$/  parallelism: two/'          # a string where an integer goes
  's/^      restartPolicy: Never$/      restartPolicy: [Never]/' # a list where a string goes
  's/^  completions: 2$/  completions: 2\n  completions: 3/' # a duplicate key
  '/^          image: /d'                          # harmless: image is optional in the schema...
)
# ...so the last one is a control that must still pass, proving the
# rejections above come from the schema and not from a broken file.
expect=(reject reject reject reject accept)
for i in "${!mutations[@]}"; do
  sed "${mutations[$i]}" "$job" >"$tmp/job-$i.yaml"
  cmp -s "$job" "$tmp/job-$i.yaml" && fail "mutation ${mutations[$i]} changed nothing in $job"
  if validate "$tmp/job-$i.yaml" >"$tmp/out-$i" 2>&1; then got=accept; else got=reject; fi
  [[ $got == "${expect[$i]}" ]] || { cat "$tmp/out-$i" >&2; fail "kubeconform should ${expect[$i]} the Job with ${mutations[$i]}"; }
  why=$(sed -n "s/.*failed with '[^']*' - \(.*\)/\1/p; s/.* is invalid: \(error unmarshalling.*\)/\1/p" "$tmp/out-$i" | head -n 1)
  say "Job with '${mutations[$i]}': ${got}ed${why:+: $why}"
done
echo "k8s-manifests: PASS (${#manifests[@]} files, ${#mutations[@]} controls)"
