#!/usr/bin/env python3
"""Recomputes the golden marginal arm plan digests of arms_golden_test.go.

The payloads are written out by hand with upstream's keys, and hashed the
way every Cacheon identity is: the SHA-256 of the canonical JSON (sorted
keys, no whitespace, no ASCII escaping, no NaN) of the envelope
{"domain": domain, "payload": payload, "schema_version": 1}. Nothing here
uses the Go code, so agreement is an independent check of the payload's
shape and of its encoding.

Re-run from the repository root with

    python3 stacks/plan/testdata/marginal_arm_plan_digest.py

and copy each printed digest into the test's table under its case name.
"""

import hashlib
import json

DOMAIN = "cacheon.stack.marginal-arm-plan"


def d64(c):
    return c * 64


def proposal(target, spec, artifact, payload, attribution):
    return {
        "type": "proposal",
        "schema_version": 1,
        "target_id": target,
        "target_spec_digest": spec,
        "artifact_digest": artifact,
        "selected_payload_digest": payload,
        "attribution_digest": attribution,
    }


def arm_plan(incumbent_stack, incumbent_tree, candidate_stack, candidate_tree, transition):
    baseline = {"stack_digest": incumbent_stack, "tree_digest": incumbent_tree}
    return {
        "schema_version": 1,
        "policy_version": "stack-plan.v1",
        "incumbent_stack_digest": incumbent_stack,
        "candidate_stack_digest": candidate_stack,
        "transition": transition,
        "baseline_before": baseline,
        "challenger": {"stack_digest": candidate_stack, "tree_digest": candidate_tree},
        "baseline_after": dict(baseline),
    }


def digest(domain, payload):
    envelope = {"domain": domain, "payload": payload, "schema_version": 1}
    text = json.dumps(envelope, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


CASES = {
    # The candidate replaces the incumbent's entry at an active target.
    "same-target replacement": arm_plan(
        d64("1"), d64("a"), d64("2"), d64("b"),
        {
            "target_id": "norm.rmsnorm",
            "target_spec_digest": d64("5"),
            "replacement": proposal("norm.rmsnorm", d64("5"), d64("6"), d64("7"), d64("8")),
            "prior": proposal("norm.rmsnorm", d64("5"), d64("9"), d64("c"), d64("d")),
            "displaced": [],
        },
    ),
    # An atomic target enters and displaces its two active members.
    "atomic displaces members": arm_plan(
        d64("3"), d64("e"), d64("4"), d64("f"),
        {
            "target_id": "collective.moe_epilogue.v1",
            "target_spec_digest": d64("5"),
            "replacement": proposal("collective.moe_epilogue.v1", d64("5"), d64("6"), d64("7"), d64("8")),
            "prior": None,
            "displaced": ["collective.ar_residual_rmsnorm", "collective.moe_finalize_ar_rmsnorm"],
        },
    ),
}

if __name__ == "__main__":
    for name, payload in CASES.items():
        print(f"{name}: {digest(DOMAIN, payload)}")
