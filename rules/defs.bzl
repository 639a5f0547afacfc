"""Public API of the Cacheon Bazel rules.

    load("//rules:defs.bzl", "cacheon_catalog", "cacheon_contribution", "cacheon_stack",
         "cacheon_candidate", "cacheon_test_model", "cacheon_release")

Everything under rules/private/ is an implementation detail and may change;
load only from this file. docs/reference/bazel-rules.md documents each rule
with examples.
"""

load("//rules/private:candidate.bzl", _cacheon_candidate = "cacheon_candidate")
load("//rules/private:catalog.bzl", _cacheon_catalog = "cacheon_catalog")
load("//rules/private:contribution.bzl", _cacheon_contribution = "cacheon_contribution")
load("//rules/private:model.bzl", _cacheon_test_model = "cacheon_test_model")
load("//rules/private:release.bzl", _cacheon_release = "cacheon_release")
load("//rules/private:stack.bzl", _cacheon_stack = "cacheon_stack")
load(
    ":providers.bzl",
    _CacheonCatalogInfo = "CacheonCatalogInfo",
    _CacheonContributionInfo = "CacheonContributionInfo",
    _CacheonModelInfo = "CacheonModelInfo",
    _CacheonReleaseInfo = "CacheonReleaseInfo",
    _CacheonStackInfo = "CacheonStackInfo",
)

cacheon_catalog = _cacheon_catalog
cacheon_contribution = _cacheon_contribution
cacheon_stack = _cacheon_stack
cacheon_candidate = _cacheon_candidate
cacheon_test_model = _cacheon_test_model
cacheon_release = _cacheon_release

CacheonCatalogInfo = _CacheonCatalogInfo
CacheonContributionInfo = _CacheonContributionInfo
CacheonStackInfo = _CacheonStackInfo
CacheonModelInfo = _CacheonModelInfo
CacheonReleaseInfo = _CacheonReleaseInfo
