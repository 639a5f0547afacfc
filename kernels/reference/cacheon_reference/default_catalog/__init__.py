# Code generated from catalog/targets.hcl by `go test ./kernels/reference -run TestDefaultCatalogContractsAreCurrent -update`. DO NOT EDIT.
"""The slot contracts of the default catalog, by slot id, in the wire form a
verify worker receives them (see docs/reference/worker-protocol.md).

For Python code that runs outside a verify worker and needs a slot's catalog
values: cacheon_reference.get(name) binds them. Verify workers never read
this module: the controller sends them the contract of the catalog in use.
"""

import json

CONTRACTS = json.loads(r"""
{
 "activation.silu_and_mul": {
  "slot": "activation.silu_and_mul",
  "kind": "op",
  "reference_id": "activation.silu_and_mul.reference.v1",
  "entry": "silu_and_mul",
  "prepare": "",
  "call": [
   "x",
   "out"
  ],
  "outputs": [
   "out"
  ],
  "graph_dynamic_inputs": [
   "x"
  ],
  "correctness": {
   "mode": "allclose",
   "top_k": 0,
   "min_ratio": "1",
   "min_cosine": "0",
   "max_rel_norm_err": "0",
   "min_overlap": "0"
  },
  "tolerances": {
   "bfloat16": {
    "atol": "0.02",
    "rtol": "0.02"
   },
   "float16": {
    "atol": "0.01",
    "rtol": "0.01"
   },
   "float32": {
    "atol": "0.00001",
    "rtol": "0.00001"
   }
  },
  "kl_threshold": null,
  "shape_params": [
   "T",
   "d"
  ],
  "shape_flags": [],
  "shapes": [
   [
    1,
    1024
   ],
   [
    8,
    1024
   ],
   [
    128,
    4096
   ],
   [
    4096,
    4096
   ],
   [
    333,
    2880
   ]
  ]
 },
 "attention.decode": {
  "slot": "attention.decode",
  "kind": "block",
  "reference_id": "attention.decode.reference.v1",
  "entry": "attention_decode",
  "prepare": "",
  "call": [
   "q",
   "k",
   "v",
   "seq_lens",
   "sm_scale",
   "out"
  ],
  "outputs": [
   "out"
  ],
  "graph_dynamic_inputs": [
   "q",
   "k",
   "v",
   "seq_lens"
  ],
  "correctness": {
   "mode": "matched_ratio",
   "top_k": 0,
   "min_ratio": "0.99",
   "min_cosine": "0",
   "max_rel_norm_err": "0",
   "min_overlap": "0"
  },
  "tolerances": {
   "bfloat16": {
    "atol": "0.02",
    "rtol": "0.02"
   },
   "float16": {
    "atol": "0.01",
    "rtol": "0.01"
   },
   "float32": {
    "atol": "0.00001",
    "rtol": "0.00001"
   }
  },
  "kl_threshold": "0.03",
  "shape_params": [
   "B",
   "Hq",
   "Hkv",
   "D",
   "ctx"
  ],
  "shape_flags": [],
  "shapes": [
   [
    4,
    8,
    8,
    64,
    16
   ],
   [
    2,
    8,
    2,
    128,
    32
   ],
   [
    8,
    16,
    16,
    128,
    64
   ],
   [
    3,
    8,
    1,
    128,
    48
   ]
  ]
 },
 "attention.msa_block_score": {
  "slot": "attention.msa_block_score",
  "kind": "block",
  "reference_id": "attention.msa_block_score.reference.v1",
  "entry": "msa_block_score",
  "prepare": "",
  "call": [
   "q",
   "index_k",
   "seq_lens",
   "block_size",
   "block_scores"
  ],
  "outputs": [
   "block_scores"
  ],
  "graph_dynamic_inputs": [
   "q",
   "index_k",
   "seq_lens"
  ],
  "correctness": {
   "mode": "topk_overlap",
   "top_k": 8,
   "min_ratio": "1",
   "min_cosine": "0",
   "max_rel_norm_err": "0",
   "min_overlap": "0.875"
  },
  "tolerances": {
   "bfloat16": {
    "atol": "0.02",
    "rtol": "0.02"
   },
   "float16": {
    "atol": "0.01",
    "rtol": "0.01"
   },
   "float32": {
    "atol": "0.00001",
    "rtol": "0.00001"
   }
  },
  "kl_threshold": "0.03",
  "shape_params": [
   "B",
   "Hq",
   "D",
   "ctx",
   "bs"
  ],
  "shape_flags": [],
  "shapes": [
   [
    4,
    4,
    128,
    1536,
    128
   ],
   [
    2,
    4,
    128,
    2048,
    128
   ],
   [
    8,
    8,
    64,
    1536,
    128
   ],
   [
    3,
    4,
    128,
    4096,
    128
   ]
  ]
 },
 "attention.msa_prefill_block_score": {
  "slot": "attention.msa_prefill_block_score",
  "kind": "block",
  "reference_id": "attention.msa_prefill_block_score.reference.v1",
  "entry": "msa_prefill_block_score",
  "prepare": "",
  "call": [
   "q",
   "index_k",
   "prefix_len",
   "scale",
   "block_size",
   "block_scores"
  ],
  "outputs": [
   "block_scores"
  ],
  "graph_dynamic_inputs": [
   "q",
   "index_k"
  ],
  "correctness": {
   "mode": "topk_overlap",
   "top_k": 8,
   "min_ratio": "1",
   "min_cosine": "0",
   "max_rel_norm_err": "0",
   "min_overlap": "0.9"
  },
  "tolerances": {
   "bfloat16": {
    "atol": "0.02",
    "rtol": "0.02"
   },
   "float16": {
    "atol": "0.01",
    "rtol": "0.01"
   },
   "float32": {
    "atol": "0.00001",
    "rtol": "0.00001"
   }
  },
  "kl_threshold": "0.03",
  "shape_params": [
   "q_len",
   "prefix_blocks",
   "D",
   "bs",
   "causal_probe"
  ],
  "shape_flags": [
   "causal_probe"
  ],
  "shapes": [
   [
    16,
    12,
    128,
    128,
    0
   ],
   [
    128,
    16,
    128,
    128,
    0
   ],
   [
    33,
    20,
    64,
    128,
    0
   ],
   [
    64,
    24,
    128,
    64,
    0
   ],
   [
    16,
    12,
    128,
    128,
    1
   ],
   [
    128,
    16,
    128,
    128,
    1
   ],
   [
    33,
    20,
    64,
    128,
    1
   ],
   [
    64,
    24,
    128,
    64,
    1
   ],
   [
    512,
    12,
    64,
    128,
    0
   ],
   [
    512,
    12,
    128,
    64,
    0
   ],
   [
    512,
    12,
    128,
    128,
    0
   ]
  ]
 },
 "attention.sdpa": {
  "slot": "attention.sdpa",
  "kind": "block",
  "reference_id": "attention.sdpa.reference.v1",
  "entry": "attention",
  "prepare": "",
  "call": [
   "q",
   "k",
   "v",
   "out",
   "sm_scale",
   "causal"
  ],
  "outputs": [
   "out"
  ],
  "graph_dynamic_inputs": [
   "q",
   "k",
   "v"
  ],
  "correctness": {
   "mode": "matched_ratio",
   "top_k": 0,
   "min_ratio": "0.99",
   "min_cosine": "0",
   "max_rel_norm_err": "0",
   "min_overlap": "0"
  },
  "tolerances": {
   "bfloat16": {
    "atol": "0.02",
    "rtol": "0.02"
   },
   "float16": {
    "atol": "0.01",
    "rtol": "0.01"
   },
   "float32": {
    "atol": "0.00001",
    "rtol": "0.00001"
   }
  },
  "kl_threshold": "0.03",
  "shape_params": [
   "T",
   "Hq",
   "Hkv",
   "D"
  ],
  "shape_flags": [],
  "shapes": [
   [
    1,
    8,
    8,
    64
   ],
   [
    16,
    8,
    2,
    128
   ],
   [
    64,
    16,
    16,
    128
   ],
   [
    128,
    8,
    1,
    128
   ]
  ]
 },
 "collective.all_reduce": {
  "slot": "collective.all_reduce",
  "kind": "collective",
  "reference_id": "collective.all_reduce.reference.v1",
  "entry": "all_reduce",
  "prepare": "",
  "call": [
   "x",
   "out",
   "group"
  ],
  "outputs": [
   "out"
  ],
  "graph_dynamic_inputs": [
   "x"
  ],
  "correctness": {
   "mode": "matched_ratio",
   "top_k": 0,
   "min_ratio": "0.99",
   "min_cosine": "0",
   "max_rel_norm_err": "0",
   "min_overlap": "0"
  },
  "tolerances": {
   "bfloat16": {
    "atol": "0.02",
    "rtol": "0.02"
   },
   "float16": {
    "atol": "0.01",
    "rtol": "0.01"
   },
   "float32": {
    "atol": "0.00001",
    "rtol": "0.00001"
   }
  },
  "kl_threshold": null,
  "shape_params": [
   "M",
   "H"
  ],
  "shape_flags": [],
  "shapes": [
   [
    1,
    4096
   ],
   [
    8,
    4096
   ],
   [
    128,
    7168
   ]
  ]
 },
 "collective.ar_residual_rmsnorm": {
  "slot": "collective.ar_residual_rmsnorm",
  "kind": "collective",
  "reference_id": "collective.ar_residual_rmsnorm.reference.v1",
  "entry": "ar_residual_rmsnorm",
  "prepare": "",
  "call": [
   "x",
   "residual",
   "weight",
   "eps",
   "out_norm",
   "out_residual",
   "group"
  ],
  "outputs": [
   "out_norm",
   "out_residual"
  ],
  "graph_dynamic_inputs": [
   "x",
   "residual"
  ],
  "correctness": {
   "mode": "matched_ratio",
   "top_k": 0,
   "min_ratio": "0.99",
   "min_cosine": "0",
   "max_rel_norm_err": "0",
   "min_overlap": "0"
  },
  "tolerances": {
   "bfloat16": {
    "atol": "0.02",
    "rtol": "0.02"
   },
   "float16": {
    "atol": "0.01",
    "rtol": "0.01"
   },
   "float32": {
    "atol": "0.00001",
    "rtol": "0.00001"
   }
  },
  "kl_threshold": null,
  "shape_params": [
   "M",
   "H"
  ],
  "shape_flags": [],
  "shapes": [
   [
    4,
    4096
   ],
   [
    8,
    6144
   ],
   [
    32,
    6144
   ],
   [
    64,
    6144
   ],
   [
    256,
    6144
   ]
  ]
 },
 "collective.moe_finalize_ar_rmsnorm": {
  "slot": "collective.moe_finalize_ar_rmsnorm",
  "kind": "collective",
  "reference_id": "collective.moe_finalize_ar_rmsnorm.reference.v1",
  "entry": "moe_finalize_ar_rmsnorm",
  "prepare": "",
  "call": [
   "gemm_out",
   "row_map",
   "scales",
   "residual",
   "weight",
   "eps",
   "out_norm",
   "out_residual",
   "group"
  ],
  "outputs": [
   "out_norm",
   "out_residual"
  ],
  "graph_dynamic_inputs": [
   "gemm_out",
   "row_map",
   "scales",
   "residual"
  ],
  "correctness": {
   "mode": "matched_ratio",
   "top_k": 0,
   "min_ratio": "0.99",
   "min_cosine": "0",
   "max_rel_norm_err": "0",
   "min_overlap": "0"
  },
  "tolerances": {
   "bfloat16": {
    "atol": "0.02",
    "rtol": "0.02"
   },
   "float16": {
    "atol": "0.01",
    "rtol": "0.01"
   },
   "float32": {
    "atol": "0.00001",
    "rtol": "0.00001"
   }
  },
  "kl_threshold": null,
  "shape_params": [
   "T",
   "T_exp",
   "K",
   "H"
  ],
  "shape_flags": [],
  "shapes": [
   [
    8,
    16,
    5,
    4096
   ],
   [
    64,
    64,
    5,
    6144
   ],
   [
    224,
    256,
    5,
    6144
   ]
  ]
 },
 "moe.fused_experts": {
  "slot": "moe.fused_experts",
  "kind": "block",
  "reference_id": "moe.fused_experts.reference.v1",
  "entry": "fused_experts",
  "prepare": "prepare",
  "call": [
   "x",
   "topk_ids",
   "topk_weights",
   "prepared",
   "out"
  ],
  "outputs": [
   "out"
  ],
  "graph_dynamic_inputs": [
   "x",
   "topk_ids",
   "topk_weights"
  ],
  "correctness": {
   "mode": "matched_ratio",
   "top_k": 0,
   "min_ratio": "0.97",
   "min_cosine": "0",
   "max_rel_norm_err": "0",
   "min_overlap": "0"
  },
  "tolerances": {
   "bfloat16": {
    "atol": "0.02",
    "rtol": "0.02"
   },
   "float16": {
    "atol": "0.01",
    "rtol": "0.01"
   },
   "float32": {
    "atol": "0.00001",
    "rtol": "0.00001"
   }
  },
  "kl_threshold": null,
  "shape_params": [
   "M",
   "E",
   "H",
   "I",
   "K"
  ],
  "shape_flags": [],
  "shapes": [
   [
    4,
    8,
    256,
    128,
    2
   ],
   [
    16,
    32,
    512,
    256,
    4
   ],
   [
    8,
    4,
    384,
    192,
    1
   ],
   [
    33,
    16,
    320,
    160,
    4
   ]
  ]
 },
 "moe.fused_experts_reduce": {
  "slot": "moe.fused_experts_reduce",
  "kind": "collective",
  "reference_id": "moe.fused_experts_reduce.reference.v1",
  "entry": "fused_experts_reduce",
  "prepare": "prepare",
  "call": [
   "x",
   "topk_ids",
   "topk_weights",
   "prepared",
   "out",
   "group"
  ],
  "outputs": [
   "out"
  ],
  "graph_dynamic_inputs": [
   "x",
   "topk_ids",
   "topk_weights"
  ],
  "correctness": {
   "mode": "matched_ratio",
   "top_k": 0,
   "min_ratio": "0.97",
   "min_cosine": "0",
   "max_rel_norm_err": "0",
   "min_overlap": "0"
  },
  "tolerances": {
   "bfloat16": {
    "atol": "0.02",
    "rtol": "0.02"
   },
   "float16": {
    "atol": "0.01",
    "rtol": "0.01"
   },
   "float32": {
    "atol": "0.00001",
    "rtol": "0.00001"
   }
  },
  "kl_threshold": null,
  "shape_params": [
   "M",
   "E",
   "H",
   "I",
   "K"
  ],
  "shape_flags": [],
  "shapes": [
   [
    4,
    8,
    256,
    128,
    2
   ],
   [
    16,
    32,
    512,
    256,
    4
   ],
   [
    8,
    4,
    384,
    192,
    1
   ]
  ]
 },
 "norm.rmsnorm": {
  "slot": "norm.rmsnorm",
  "kind": "op",
  "reference_id": "norm.rmsnorm.reference.v1",
  "entry": "rmsnorm",
  "prepare": "",
  "call": [
   "x",
   "weight",
   "out",
   "eps"
  ],
  "outputs": [
   "out"
  ],
  "graph_dynamic_inputs": [
   "x"
  ],
  "correctness": {
   "mode": "allclose",
   "top_k": 0,
   "min_ratio": "1",
   "min_cosine": "0",
   "max_rel_norm_err": "0",
   "min_overlap": "0"
  },
  "tolerances": {
   "bfloat16": {
    "atol": "0.02",
    "rtol": "0.02"
   },
   "float16": {
    "atol": "0.01",
    "rtol": "0.01"
   },
   "float32": {
    "atol": "0.00001",
    "rtol": "0.00001"
   }
  },
  "kl_threshold": null,
  "shape_params": [
   "T",
   "H"
  ],
  "shape_flags": [],
  "shapes": [
   [
    1,
    2880
   ],
   [
    8,
    2880
   ],
   [
    128,
    2880
   ],
   [
    64,
    6144
   ],
   [
    4096,
    4096
   ],
   [
    333,
    1536
   ]
  ]
 }
}
""")
