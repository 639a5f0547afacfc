# The Cacheon target catalog.
#
# A slot is an execution boundary in the engine: the validator owns the
# call site, allocates every output and checks the candidate against a
# trusted high-precision reference. A target is a reward unit: what a
# contribution competes for. Every slot has a singleton target of the same
# name; an atomic target rewards several slots replaced together.
#
# Identities are computed over canonical JSON projections of this file,
# never over its bytes: reordering blocks, comments and whitespace change
# nothing. Decimal thresholds are strings ("0.00001", not 1e-5) because
# identities carry them as canonical decimal strings.
#
# Reference: docs/reference/catalog-hcl.md. Check an edit with
#   cacheon catalog check catalog/targets.hcl

catalog {
  policy_version = "target-catalog.v1"
}

# ---------------------------------------------------------------------------
# Features: what a contribution may use. The manifest declares some (entry,
# variants, prepare, setup, override, cuda_sources, aot:<provider>,
# dep_patch:<dependency>); the trusted rebuild observes the rebuild:*
# ones. Each target admits a subset.

features {
  vocabulary = [
    "entry",
    "variants",
    "prepare",
    "setup",
    "override",
    "cuda_sources",
    "rebuild:build_cuda_ext",
    "rebuild:apply_dep_patch",
    "dep_patch:flashinfer",
    "aot:cutlass.cute.cubin.v1",
    "rebuild:build_cute_cubin",
  ]

  # Engine setup hooks run outside any slot boundary; a bundle that needs
  # one is classified for the discovery lane, never crowned at a target.
  observed_only = ["setup"]
}

# What every singleton target admits.
feature_set "standard" {
  features = [
    "entry",
    "variants",
    "prepare",
    "override",
    "cuda_sources",
    "rebuild:build_cuda_ext",
    "aot:cutlass.cute.cubin.v1",
    "rebuild:build_cute_cubin",
  ]
}

# The MoE epilogue needs a patched flashinfer to export the MoE GEMM output
# before finalization.
feature_set "flashinfer_patch" {
  features = ["dep_patch:flashinfer", "rebuild:apply_dep_patch"]
}

# ---------------------------------------------------------------------------
# Artifact providers: producers of ahead-of-time compiled artifacts a
# contribution may ship instead of source compiled at load time.

artifact_provider "cutlass.cute.cubin.v1" {
  artifact_kind            = "cuda_cubin"
  authoritative            = true
  binding_abi              = "cuda_driver_params.v1"
  build_patcher_id         = "cacheon.build-cute-cubin.v1"
  build_phase              = "oci_prebuild_only"
  load_phase               = "isolated_engine_worker_only"
  publication_directory    = "cute_cubin"
  crownable                = true
  supports_static_slots    = true
  requires_compile_profile = true
  compile_profile_inputs = [
    "max_active_clusters.cluster_size_1",
    "max_active_clusters.cluster_size_2",
    "max_active_clusters.cluster_size_4",
    "max_active_clusters.cluster_size_8",
    "max_active_clusters.cluster_size_16",
  ]
  provider_capabilities    = ["group.native_handle.v1", "group.peer_ptr_table.v1"]
  rebuild_feature          = "rebuild:build_cute_cubin"
  required_target_features = ["aot:cutlass.cute.cubin.v1", "rebuild:build_cute_cubin"]
}

# ---------------------------------------------------------------------------
# Tolerances: the allclose bound per dtype. Every slot uses the standard set.

tolerance_set "standard" {
  bfloat16 = { atol = "0.02", rtol = "0.02" }
  float16  = { atol = "0.01", rtol = "0.01" }
  float32  = { atol = "0.00001", rtol = "0.00001" }
}

# ---------------------------------------------------------------------------
# Slots (the submission ABI).

slot "activation.silu_and_mul" {
  kind    = "op"
  summary = "out = silu(x[:, :d]) * x[:, d:], SiLU computed in fp32 then cast; x (T, 2d) -> out (T, d)"

  entry                = "silu_and_mul"
  call                 = ["x", "out"]
  outputs              = ["out"]
  graph_dynamic_inputs = ["x"]

  binding_family_id       = "sglang.activation.silu_and_mul.v1"
  input_abi_id            = "activation.silu_and_mul.input.v1"
  output_abi_id           = "activation.silu_and_mul.output.v1"
  reference_id            = "activation.silu_and_mul.reference.v1"
  verification_profile_id = "activation.silu_and_mul.verify.v1"

  correctness {
    mode = "allclose"
  }
  tolerances = tolerance_set.standard

  shape_params = ["T", "d"]
  shapes       = [[1, 1024], [8, 1024], [128, 4096], [4096, 4096], [333, 2880]]
}

slot "norm.rmsnorm" {
  kind    = "op"
  summary = "out = x * rsqrt(mean(x^2) + eps) * weight in fp32, cast; the residual add stays outside"

  entry                = "rmsnorm"
  call                 = ["x", "weight", "out", "eps"]
  outputs              = ["out"]
  graph_dynamic_inputs = ["x"]

  binding_family_id       = "sglang.norm.rmsnorm.v1"
  input_abi_id            = "norm.rmsnorm.input.v1"
  output_abi_id           = "norm.rmsnorm.output.v1"
  reference_id            = "norm.rmsnorm.reference.v1"
  verification_profile_id = "norm.rmsnorm.verify.v1"

  correctness {
    mode = "allclose"
  }
  tolerances = tolerance_set.standard

  shape_params = ["T", "H"]
  shapes       = [[1, 2880], [8, 2880], [128, 2880], [64, 6144], [4096, 4096], [333, 1536]]
}

slot "attention.sdpa" {
  kind    = "block"
  summary = "causal GQA softmax attention of q (T, Hq, D) over k, v (S, Hkv, D) with scale sm_scale"

  entry                = "attention"
  call                 = ["q", "k", "v", "out", "sm_scale", "causal"]
  outputs              = ["out"]
  graph_dynamic_inputs = ["q", "k", "v"]

  binding_family_id       = "sglang.attention.radix.v1"
  input_abi_id            = "attention.sdpa.input.v1"
  output_abi_id           = "attention.sdpa.output.v1"
  reference_id            = "attention.sdpa.reference.v1"
  verification_profile_id = "attention.sdpa.verify.v1"

  correctness {
    mode      = "matched_ratio"
    min_ratio = "0.99"
  }
  tolerances   = tolerance_set.standard
  kl_threshold = "0.03"

  shape_params = ["T", "Hq", "Hkv", "D"]
  shapes       = [[1, 8, 8, 64], [16, 8, 2, 128], [64, 16, 16, 128], [128, 8, 1, 128]]
}

slot "attention.decode" {
  kind    = "block"
  summary = "decode attention of q (B, Hq, D) over k, v (B, S, Hkv, D), masking positions >= seq_lens"

  entry                = "attention_decode"
  call                 = ["q", "k", "v", "seq_lens", "sm_scale", "out"]
  outputs              = ["out"]
  graph_dynamic_inputs = ["q", "k", "v", "seq_lens"]

  binding_family_id       = "sglang.attention.decode.v1"
  input_abi_id            = "attention.decode.input.v1"
  output_abi_id           = "attention.decode.output.v1"
  reference_id            = "attention.decode.reference.v1"
  verification_profile_id = "attention.decode.verify.v1"

  correctness {
    mode      = "matched_ratio"
    min_ratio = "0.99"
  }
  tolerances   = tolerance_set.standard
  kl_threshold = "0.03"

  shape_params = ["B", "Hq", "Hkv", "D", "ctx"]
  shapes       = [[4, 8, 8, 64, 16], [2, 8, 2, 128, 32], [8, 16, 16, 128, 64], [3, 8, 1, 128, 48]]
}

slot "attention.msa_block_score" {
  kind    = "block"
  summary = "MSA decode block scores: head-summed q . index_k, masked past seq_lens, max per key block -> (B, S/bs)"

  entry                = "msa_block_score"
  call                 = ["q", "index_k", "seq_lens", "block_size", "block_scores"]
  outputs              = ["block_scores"]
  graph_dynamic_inputs = ["q", "index_k", "seq_lens"]

  binding_family_id       = "sglang.attention.msa.decode-score.v1"
  input_abi_id            = "attention.msa_block_score.input.v1"
  output_abi_id           = "attention.msa_block_score.output.v1"
  reference_id            = "attention.msa_block_score.reference.v1"
  verification_profile_id = "attention.msa_block_score.verify.v1"

  # The validator selects the top-k blocks from the score sheet, so only
  # the ranking matters.
  correctness {
    mode        = "topk_overlap"
    top_k       = 8
    min_overlap = "0.875"
  }
  tolerances   = tolerance_set.standard
  kl_threshold = "0.03"

  shape_params = ["B", "Hq", "D", "ctx", "bs"]
  shapes = [
    [4, 4, 128, 1536, 128],
    [2, 4, 128, 2048, 128],
    [8, 8, 64, 1536, 128],
    [3, 4, 128, 4096, 128],
  ]
}

slot "attention.msa_prefill_block_score" {
  kind    = "block"
  summary = "MSA prefill block scores: causal scaled q . index_k^T, max per key block into a strided fp32 (T, ceil(S/bs))"

  entry                = "msa_prefill_block_score"
  call                 = ["q", "index_k", "prefix_len", "scale", "block_size", "block_scores"]
  outputs              = ["block_scores"]
  graph_dynamic_inputs = ["q", "index_k"]

  binding_family_id       = "sglang.attention.msa.prefill-score.v1"
  input_abi_id            = "attention.msa_prefill_block_score.input.v1"
  output_abi_id           = "attention.msa_prefill_block_score.output.v1"
  reference_id            = "attention.msa_prefill_block_score.reference.v1"
  verification_profile_id = "attention.msa_prefill_block_score.verify.v1"

  correctness {
    mode        = "topk_overlap"
    top_k       = 8
    min_overlap = "0.9"
  }
  tolerances   = tolerance_set.standard
  kl_threshold = "0.03"

  # causal_probe = 1 checks the shape with a probe that catches a kernel
  # ignoring causality.
  shape_params = ["q_len", "prefix_blocks", "D", "bs", "causal_probe"]
  shape_flags  = ["causal_probe"]
  shapes = [
    [16, 12, 128, 128, 0],
    [128, 16, 128, 128, 0],
    [33, 20, 64, 128, 0],
    [64, 24, 128, 64, 0],
    [16, 12, 128, 128, 1],
    [128, 16, 128, 128, 1],
    [33, 20, 64, 128, 1],
    [64, 24, 128, 64, 1],
    [512, 12, 64, 128, 0],
    [512, 12, 128, 64, 0],
    [512, 12, 128, 128, 0],
  ]
}

slot "moe.fused_experts" {
  kind    = "block"
  summary = "fused MoE experts: out = sum_k topk_weights * (silu(gate) * up) @ w2^T over prepared w13, w2"

  entry                = "fused_experts"
  prepare              = "prepare"
  call                 = ["x", "topk_ids", "topk_weights", "prepared", "out"]
  outputs              = ["out"]
  graph_dynamic_inputs = ["x", "topk_ids", "topk_weights"]

  binding_family_id       = "sglang.moe.fused-experts.dispatch.v1"
  input_abi_id            = "moe.fused_experts.input.v1"
  output_abi_id           = "moe.fused_experts.output.v1"
  reference_id            = "moe.fused_experts.reference.v1"
  verification_profile_id = "moe.fused_experts.verify.v1"

  correctness {
    mode      = "matched_ratio"
    min_ratio = "0.97"
  }
  tolerances = tolerance_set.standard

  shape_params = ["M", "E", "H", "I", "K"]
  shapes = [
    [4, 8, 256, 128, 2],
    [16, 32, 512, 256, 4],
    [8, 4, 384, 192, 1],
    [33, 16, 320, 160, 4],
  ]
}

slot "moe.fused_experts_reduce" {
  kind    = "collective"
  summary = "expert-parallel fused MoE: each rank computes its local experts, out = cross-rank sum"

  entry                = "fused_experts_reduce"
  prepare              = "prepare"
  call                 = ["x", "topk_ids", "topk_weights", "prepared", "out", "group"]
  outputs              = ["out"]
  graph_dynamic_inputs = ["x", "topk_ids", "topk_weights"]

  binding_family_id       = "sglang.moe.fused-experts.dispatch.v1"
  input_abi_id            = "moe.fused_experts_reduce.input.v1"
  output_abi_id           = "moe.fused_experts_reduce.output.v1"
  reference_id            = "moe.fused_experts_reduce.reference.v1"
  verification_profile_id = "moe.fused_experts_reduce.verify.v1"

  correctness {
    mode      = "matched_ratio"
    min_ratio = "0.97"
  }
  tolerances = tolerance_set.standard

  shape_params = ["M", "E", "H", "I", "K"]
  shapes = [
    [4, 8, 256, 128, 2],
    [16, 32, 512, 256, 4],
    [8, 4, 384, 192, 1],
  ]
}

slot "collective.all_reduce" {
  kind    = "collective"
  summary = "all-reduce: out = cross-rank sum of x"

  entry                = "all_reduce"
  call                 = ["x", "out", "group"]
  outputs              = ["out"]
  graph_dynamic_inputs = ["x"]

  binding_family_id       = "sglang.collective.all_reduce.v1"
  input_abi_id            = "collective.all_reduce.input.v1"
  output_abi_id           = "collective.all_reduce.output.v1"
  reference_id            = "collective.all_reduce.reference.v1"
  verification_profile_id = "collective.all_reduce.verify.v1"

  correctness {
    mode      = "matched_ratio"
    min_ratio = "0.99"
  }
  tolerances = tolerance_set.standard

  shape_params = ["M", "H"]
  shapes       = [[1, 4096], [8, 4096], [128, 7168]]
}

slot "collective.ar_residual_rmsnorm" {
  kind    = "collective"
  summary = "all-reduce + residual add + RMSNorm: out_residual = sum(x) + residual, out_norm = rmsnorm(out_residual) * weight"

  entry                = "ar_residual_rmsnorm"
  call                 = ["x", "residual", "weight", "eps", "out_norm", "out_residual", "group"]
  outputs              = ["out_norm", "out_residual"]
  graph_dynamic_inputs = ["x", "residual"]

  binding_family_id       = "sglang.collective.ar-fusion.v1"
  input_abi_id            = "collective.ar_residual_rmsnorm.input.v1"
  output_abi_id           = "collective.ar_residual_rmsnorm.output.v1"
  reference_id            = "collective.ar_residual_rmsnorm.reference.v1"
  verification_profile_id = "collective.ar_residual_rmsnorm.verify.v1"

  correctness {
    mode      = "matched_ratio"
    min_ratio = "0.99"
  }
  tolerances = tolerance_set.standard

  shape_params = ["M", "H"]
  shapes       = [[4, 4096], [8, 6144], [32, 6144], [64, 6144], [256, 6144]]
}

slot "collective.moe_finalize_ar_rmsnorm" {
  kind    = "collective"
  summary = "MoE finalize + all-reduce + residual add + RMSNorm: per-rank weighted gather of expert rows, cross-rank sum, then add and norm"

  entry                = "moe_finalize_ar_rmsnorm"
  call                 = ["gemm_out", "row_map", "scales", "residual", "weight", "eps", "out_norm", "out_residual", "group"]
  outputs              = ["out_norm", "out_residual"]
  graph_dynamic_inputs = ["gemm_out", "row_map", "scales", "residual"]

  binding_family_id       = "sglang.collective.moe-finalize.v1"
  input_abi_id            = "collective.moe_finalize_ar_rmsnorm.input.v1"
  output_abi_id           = "collective.moe_finalize_ar_rmsnorm.output.v1"
  reference_id            = "collective.moe_finalize_ar_rmsnorm.reference.v1"
  verification_profile_id = "collective.moe_finalize_ar_rmsnorm.verify.v1"

  correctness {
    mode      = "matched_ratio"
    min_ratio = "0.99"
  }
  tolerances = tolerance_set.standard

  # K = 5: top-4 routed experts plus the shared expert.
  shape_params = ["T", "T_exp", "K", "H"]
  shapes       = [[8, 16, 5, 4096], [64, 64, 5, 6144], [224, 256, 5, 6144]]
}

# ---------------------------------------------------------------------------
# Targets (the reward units).

target "activation.silu_and_mul" {
  kind             = "slot"
  members          = ["activation.silu_and_mul"]
  contract         = "activation.silu_and_mul"
  allowed_features = feature_set.standard
}

target "norm.rmsnorm" {
  kind             = "slot"
  members          = ["norm.rmsnorm"]
  contract         = "norm.rmsnorm"
  allowed_features = feature_set.standard
}

target "attention.sdpa" {
  kind             = "slot"
  members          = ["attention.sdpa"]
  contract         = "attention.sdpa"
  allowed_features = feature_set.standard
}

target "attention.decode" {
  kind             = "slot"
  members          = ["attention.decode"]
  contract         = "attention.decode"
  allowed_features = feature_set.standard
}

target "attention.msa_block_score" {
  kind             = "slot"
  members          = ["attention.msa_block_score"]
  contract         = "attention.msa_block_score"
  allowed_features = feature_set.standard
}

target "attention.msa_prefill_block_score" {
  kind             = "slot"
  members          = ["attention.msa_prefill_block_score"]
  contract         = "attention.msa_prefill_block_score"
  allowed_features = feature_set.standard
}

# The two MoE targets bind at the same dispatch site and compose: when
# both are active, the reduce variant is tried first.
target "moe.fused_experts" {
  kind             = "slot"
  members          = ["moe.fused_experts"]
  contract         = "moe.fused_experts"
  compatible_with  = ["moe.fused_experts_reduce"]
  allowed_features = feature_set.standard
}

target "moe.fused_experts_reduce" {
  kind             = "slot"
  members          = ["moe.fused_experts_reduce"]
  contract         = "moe.fused_experts_reduce"
  compatible_with  = ["moe.fused_experts"]
  allowed_features = feature_set.standard
}

composition_rule "sglang.moe.reduce-first.v1" {
  precedence        = ["moe.fused_experts_reduce", "moe.fused_experts"]
  mode              = "first_applicable"
  binding_family_id = "sglang.moe.fused-experts.dispatch.v1"
}

target "collective.all_reduce" {
  kind             = "slot"
  members          = ["collective.all_reduce"]
  contract         = "collective.all_reduce"
  allowed_features = feature_set.standard
}

target "collective.ar_residual_rmsnorm" {
  kind             = "slot"
  members          = ["collective.ar_residual_rmsnorm"]
  contract         = "collective.ar_residual_rmsnorm"
  allowed_features = feature_set.standard
}

target "collective.moe_finalize_ar_rmsnorm" {
  kind             = "slot"
  members          = ["collective.moe_finalize_ar_rmsnorm"]
  contract         = "collective.moe_finalize_ar_rmsnorm"
  allowed_features = concat(feature_set.standard, feature_set.flashinfer_patch)
}

# The MoE epilogue as one unit: finalize + all-reduce + norm across both
# fused call sites. It replaces its members together, so it displaces them.
target "collective.moe_epilogue.v1" {
  kind                = "atomic"
  members             = ["collective.ar_residual_rmsnorm", "collective.moe_finalize_ar_rmsnorm"]
  displaces           = ["collective.ar_residual_rmsnorm", "collective.moe_finalize_ar_rmsnorm"]
  atomic_semantics_id = "collective.moe_epilogue.v1.atomic-semantics.v1"
  allowed_features    = concat(feature_set.standard, feature_set.flashinfer_patch)
}
