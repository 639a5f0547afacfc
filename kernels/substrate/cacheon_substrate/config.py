"""Model configuration: the Hugging Face Llama / Mixtral config.json fields
the substrate runs."""

import json
import os
from dataclasses import asdict, dataclass

import torch

DTYPES = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}


class ConfigError(ValueError):
    """config.json is missing a field or describes a model the substrate cannot run."""


@dataclass(frozen=True)
class ModelConfig:
    model_type: str
    hidden_size: int
    intermediate_size: int
    num_attention_heads: int
    num_key_value_heads: int
    num_hidden_layers: int
    vocab_size: int
    rms_norm_eps: float
    rope_theta: float
    max_position_embeddings: int
    torch_dtype: str = "bfloat16"
    head_dim: int = 0
    num_local_experts: int = 0
    num_experts_per_tok: int = 0
    tie_word_embeddings: bool = False

    @property
    def is_moe(self) -> bool:
        return self.model_type == "mixtral"

    @property
    def dtype(self) -> torch.dtype:
        return DTYPES[self.torch_dtype]

    def to_json(self):
        return asdict(self)

    @classmethod
    def from_json(cls, obj, where="config.json") -> "ModelConfig":
        if not isinstance(obj, dict):
            raise ConfigError(f"{where}: not a JSON object")
        mt = obj.get("model_type")
        if mt not in ("llama", "mixtral"):
            raise ConfigError(f"{where}: model_type {mt!r}; the substrate runs llama and mixtral")
        ints = ["hidden_size", "intermediate_size", "num_attention_heads", "num_hidden_layers", "vocab_size",
                "max_position_embeddings"]
        if mt == "mixtral":
            ints += ["num_local_experts", "num_experts_per_tok"]
        vals = {"model_type": mt}
        for k in ints:
            v = obj.get(k)
            if not isinstance(v, int) or isinstance(v, bool) or v <= 0:
                raise ConfigError(f"{where}: {k} must be a positive integer, got {v!r}")
            vals[k] = v
        vals["num_key_value_heads"] = int(obj.get("num_key_value_heads") or vals["num_attention_heads"])
        vals["head_dim"] = int(obj.get("head_dim") or vals["hidden_size"] // vals["num_attention_heads"])
        vals["rms_norm_eps"] = float(obj.get("rms_norm_eps", 1e-6))
        vals["rope_theta"] = float(obj.get("rope_theta", 10000.0))
        vals["torch_dtype"] = str(obj.get("torch_dtype", "bfloat16"))
        vals["tie_word_embeddings"] = bool(obj.get("tie_word_embeddings", False))
        if vals["torch_dtype"] not in DTYPES:
            raise ConfigError(f"{where}: torch_dtype {vals['torch_dtype']!r} not in {sorted(DTYPES)}")
        if vals["num_attention_heads"] % vals["num_key_value_heads"]:
            raise ConfigError(f"{where}: {vals['num_attention_heads']} query heads do not group over "
                              f"{vals['num_key_value_heads']} KV heads")
        if vals["head_dim"] % 2:
            raise ConfigError(f"{where}: head_dim {vals['head_dim']} must be even for rotary embeddings")
        if mt == "mixtral" and vals["num_experts_per_tok"] > vals["num_local_experts"]:
            raise ConfigError(f"{where}: num_experts_per_tok exceeds num_local_experts")
        return cls(**vals)

    @classmethod
    def load(cls, model_dir: str) -> "ModelConfig":
        path = os.path.join(model_dir, "config.json")
        try:
            with open(path, encoding="utf-8") as f:
                obj = json.load(f)
        except (OSError, ValueError) as e:
            raise ConfigError(f"{path}: {e}") from None
        return cls.from_json(obj, path)

    def check_tp(self, tp: int) -> None:
        for what, n in (("num_attention_heads", self.num_attention_heads), ("num_key_value_heads", self.num_key_value_heads),
                        ("intermediate_size", self.intermediate_size)):
            if n % tp:
                raise ConfigError(f"{what}={n} does not split over tensor parallelism {tp}")
