"""Providers of the Cacheon rules: what one rule hands to the next.

Providers hold only files and strings, never mutable state, so an action's
inputs are exactly what the provider names.
"""

CacheonCatalogInfo = provider(
    doc = "A validated target catalog.",
    fields = {
        "src": "File: the catalog HCL.",
        "digest": "File: the catalog digest (64 hex and a newline).",
    },
)

CacheonContributionInfo = provider(
    doc = "A contribution bundle: a directory of source files declared by its parent's BUILD file.",
    fields = {
        "label": "string: the canonical label //package:name that stack files name.",
        "dir": "string: the bundle directory, relative to the execution root.",
        "files": "depset of File: every file of the bundle.",
        "identity": "File: `cacheon bundle inspect --json` of the bundle (content hash, selected payload, target).",
    },
)

CacheonStackInfo = provider(
    doc = "A materialized stack: the engine tree and its manifest.",
    fields = {
        "src": "File: the stack HCL.",
        "tree": "File (directory): the materialized engine tree.",
        "manifest": "File: the stack manifest JSON (identities of every entry).",
        "contributions": "list of CacheonContributionInfo: the bundles the stack names.",
        "catalog": "CacheonCatalogInfo: the catalog the stack was validated against.",
    },
)

CacheonModelInfo = provider(
    doc = "A sealed model: a model tree and its provision receipt.",
    fields = {
        "tree": "File (directory): config.json and the safetensors weights.",
        "receipt": "File: the provision receipt (content digest and every file's hash).",
    },
)

CacheonReleaseInfo = provider(
    doc = "An unsigned release image as an OCI image layout.",
    fields = {
        "layout": "File (directory): the OCI image layout (image, SBOM and provenance).",
        "stack": "CacheonStackInfo: the release stack the image was built from.",
    },
)
