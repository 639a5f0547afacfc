"""Tests of the engine substrate on the CPU.

Run (from kernels/substrate): python3 -m unittest discover -s tests
Set CACHEON_TEST_MODEL_DIR to a model written by `cacheon model make-test`
to also load it (the Go test of this directory does).
"""

import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import unittest

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, os.path.join(HERE, "..", "..", "reference"))

from cacheon_substrate import identity, safetensors, seam as seam_mod, stock  # noqa: E402
from cacheon_substrate.config import ConfigError, ModelConfig  # noqa: E402
from cacheon_substrate.engine import Engine, prompts  # noqa: E402
from cacheon_substrate.model import Model  # noqa: E402
from cacheon_substrate import weights as wmod  # noqa: E402

LLAMA = {"model_type": "llama", "hidden_size": 48, "intermediate_size": 80, "num_attention_heads": 6,
         "num_key_value_heads": 2, "num_hidden_layers": 2, "vocab_size": 97, "rms_norm_eps": 1e-6,
         "rope_theta": 10000.0, "max_position_embeddings": 64, "torch_dtype": "float32"}
MIXTRAL = dict(LLAMA, model_type="mixtral", num_local_experts=4, num_experts_per_tok=2, intermediate_size=32)


def write_model(d, cfg_json, seed):
    os.makedirs(d, exist_ok=True)
    cfg = ModelConfig.from_json(cfg_json)
    hf = wmod.random_hf(cfg, seed)
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(cfg_json, f)
    safetensors.save(os.path.join(d, "model.safetensors"), hf)
    return cfg, hf


def make_model(cfg_json, seed=0, tree=None, dtype=None):
    cfg = ModelConfig.from_json(cfg_json)
    hf = wmod.random_hf(cfg, seed)
    w = wmod.build(hf, cfg)
    return Model(cfg, w, seam_mod.load_tree(tree), "cpu", dtype=dtype), hf


def naive_logits(cfg: ModelConfig, hf, tokens):
    """An independent fp64 Hugging Face-style forward over the raw HF weights."""
    W = {k: v.double() for k, v in hf.items()}
    B, P = tokens.shape
    H, D = cfg.hidden_size, cfg.head_dim
    nh, nkv = cfg.num_attention_heads, cfg.num_key_value_heads

    def norm(x, w):
        return x / torch.sqrt((x * x).mean(-1, keepdim=True) + cfg.rms_norm_eps) * w

    def rope(x, pos):  # x (P, h, D)
        inv = 1.0 / (cfg.rope_theta ** (torch.arange(0, D, 2, dtype=torch.float64) / D))
        ang = torch.outer(pos.double(), inv)
        cos, sin = torch.cat([ang.cos()] * 2, -1)[:, None], torch.cat([ang.sin()] * 2, -1)[:, None]
        rot = torch.cat([-x[..., D // 2:], x[..., :D // 2]], -1)
        return x * cos + rot * sin

    out = []
    for b in range(B):
        x = W["model.embed_tokens.weight"][tokens[b]]
        pos = torch.arange(P)
        for i in range(cfg.num_hidden_layers):
            p = f"model.layers.{i}."
            h = norm(x, W[p + "input_layernorm.weight"])
            q = rope((h @ W[p + "self_attn.q_proj.weight"].t()).view(P, nh, D), pos)
            k = rope((h @ W[p + "self_attn.k_proj.weight"].t()).view(P, nkv, D), pos)
            v = (h @ W[p + "self_attn.v_proj.weight"].t()).view(P, nkv, D)
            att = torch.zeros(P, nh, D, dtype=torch.float64)
            for hh in range(nh):
                kv = hh // (nh // nkv)
                s = (q[:, hh] @ k[:, kv].t()) / math.sqrt(D)
                s = s.masked_fill(torch.ones(P, P, dtype=torch.bool).triu(1), float("-inf"))
                att[:, hh] = s.softmax(-1) @ v[:, kv]
            x = x + att.reshape(P, nh * D) @ W[p + "self_attn.o_proj.weight"].t()
            h = norm(x, W[p + "post_attention_layernorm.weight"])
            if cfg.is_moe:
                probs = (h @ W[p + "block_sparse_moe.gate.weight"].t()).softmax(-1)
                tw, ti = probs.topk(cfg.num_experts_per_tok, -1)
                tw = tw / tw.sum(-1, keepdim=True)
                y = torch.zeros_like(h)
                for t in range(P):
                    for j in range(cfg.num_experts_per_tok):
                        e = int(ti[t, j])
                        pre = p + f"block_sparse_moe.experts.{e}."
                        a = F.silu(h[t] @ W[pre + "w1.weight"].t()) * (h[t] @ W[pre + "w3.weight"].t())
                        y[t] += tw[t, j] * (a @ W[pre + "w2.weight"].t())
                x = x + y
            else:
                a = F.silu(h @ W[p + "mlp.gate_proj.weight"].t()) * (h @ W[p + "mlp.up_proj.weight"].t())
                x = x + a @ W[p + "mlp.down_proj.weight"].t()
        out.append(norm(x, W["model.norm.weight"]) @ W["lm_head.weight"].t())
    return torch.stack(out)


class SafetensorsTest(unittest.TestCase):
    def test_round_trip(self):
        d = tempfile.mkdtemp()
        path = os.path.join(d, "m.safetensors")
        ts = {"a": torch.randn(3, 4).to(torch.bfloat16), "b": torch.arange(5, dtype=torch.int32),
              "c": torch.zeros(0, 2), "d": torch.tensor([True, False])}
        safetensors.save(path, ts, {"format": "pt"})
        header, meta, base = safetensors.read_header(path)
        self.assertEqual(meta, {"format": "pt"})
        self.assertEqual(base % 8, 0)
        got = safetensors.load(path)
        for k, v in ts.items():
            self.assertTrue(torch.equal(got[k], v), k)

    def test_rejects_malformed(self):
        d = tempfile.mkdtemp()
        cases = {
            "short": b"\x01\x00",
            "huge header": (10**12).to_bytes(8, "little") + b"{}",
            "not json": (3).to_bytes(8, "little") + b"abc",
            "bad offsets": (0).to_bytes(8, "little"),
        }
        hdr = json.dumps({"x": {"dtype": "F32", "shape": [2], "data_offsets": [0, 4]}}).encode()
        cases["bad offsets"] = len(hdr).to_bytes(8, "little") + hdr + b"\0" * 8
        hdr2 = json.dumps({"x": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                           "y": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}}).encode()
        cases["overlap"] = len(hdr2).to_bytes(8, "little") + hdr2 + b"\0" * 12
        for name, data in cases.items():
            with self.subTest(name):
                p = os.path.join(d, name.replace(" ", "_"))
                with open(p, "wb") as f:
                    f.write(data)
                with self.assertRaises(safetensors.SafetensorsError):
                    safetensors.load(p)


class ConfigTest(unittest.TestCase):
    def test_rejections(self):
        for bad in (dict(LLAMA, model_type="gpt2"), dict(LLAMA, hidden_size=0), dict(LLAMA, num_key_value_heads=4),
                    dict(LLAMA, torch_dtype="int8"), dict(MIXTRAL, num_experts_per_tok=9)):
            with self.assertRaises(ConfigError):
                ModelConfig.from_json(bad)
        cfg = ModelConfig.from_json(LLAMA)
        with self.assertRaises(ConfigError):
            cfg.check_tp(4)  # 2 KV heads
        self.assertEqual(cfg.head_dim, 8)


class ModelTest(unittest.TestCase):
    def test_matches_naive_forward(self):
        for cfg_json in (LLAMA, MIXTRAL):
            with self.subTest(cfg_json["model_type"]):
                m, hf = make_model(cfg_json, seed=3)
                toks = prompts(2, 7, m.cfg.vocab_size, 5, "cpu")
                got = m.forward_full(toks)
                want = naive_logits(m.cfg, hf, toks)
                err = ((got.double() - want).norm() / want.norm()).item()
                self.assertLess(err, 1e-5)

    def test_decode_matches_teacher_forcing(self):
        for cfg_json in (LLAMA, MIXTRAL):
            with self.subTest(cfg_json["model_type"]):
                m, _ = make_model(cfg_json, seed=4)
                eng = Engine(m, 3)
                p = prompts(3, 6, m.cfg.vocab_size, 9, "cpu")
                g = eng.generate(p, 10)
                seq = torch.cat([p, g.tokens[:, :-1]], 1)
                tf = m.forward_full(seq)[:, 5:]
                self.assertTrue(torch.equal(tf.argmax(-1), g.tokens))
                # And a second generate on the same engine repeats itself.
                self.assertTrue(torch.equal(eng.generate(p, 10).tokens, g.tokens))

    def test_teacher_scores_a_greedy_trajectory(self):
        from cacheon_substrate import teacher
        m, hf = make_model(LLAMA, seed=4)
        p = prompts(1, 6, m.cfg.vocab_size, 9, "cpu")
        g = Engine(m, 1).generate(p, 10).tokens[0].tolist()
        nll, argmax = teacher.score(m, p[0].tolist(), g)
        # The stock engine's greedy tokens are the reference's argmaxes.
        self.assertEqual(argmax, g)
        # Each NLL is the token's under an independent fp64 forward.
        seq = torch.tensor([p[0].tolist() + g[:-1]])
        want = -torch.log_softmax(naive_logits(m.cfg, hf, seq)[0, 5:], -1)
        for i, t in enumerate(g):
            self.assertAlmostEqual(nll[i], want[i, t].item(), places=4)
        for bad in ([], [m.cfg.vocab_size], [True]):
            with self.assertRaises(ValueError):
                teacher.score(m, p[0].tolist(), bad)

    def test_bf16_close_to_fp32(self):
        m32, _ = make_model(LLAMA, seed=6)
        m16, _ = make_model(dict(LLAMA, torch_dtype="bfloat16"), seed=6)
        toks = prompts(2, 9, 97, 1, "cpu")
        a, b = m32.forward_full(toks), m16.forward_full(toks)
        self.assertLess(((a - b).norm() / a.norm()).item(), 0.05)

    def test_load_model_dir(self):
        d = tempfile.mkdtemp()
        cfg, hf = write_model(d, LLAMA, 11)
        from cacheon_substrate.runtime import Options, build
        m = build(Options(model=d))
        toks = prompts(1, 5, 97, 2, "cpu")
        self.assertLess(((m.forward_full(toks).double() - naive_logits(cfg, hf, toks)).norm()).item(), 1e-3)

    def test_go_written_model(self):
        d = os.environ.get("CACHEON_TEST_MODEL_DIR")
        if not d:
            self.skipTest("CACHEON_TEST_MODEL_DIR not set (the Go test sets it to a `cacheon model make-test` model)")
        from cacheon_substrate.runtime import Options, build
        m = build(Options(model=d))
        self.assertEqual(m.dtype, torch.bfloat16)
        hf = wmod.load_hf(d, m.cfg)
        toks = prompts(1, 6, m.cfg.vocab_size, 2, "cpu")
        got = m.forward_full(toks).double()
        want = naive_logits(m.cfg, hf, toks)
        self.assertLess(((got - want).norm() / want.norm()).item(), 0.05)
        self.assertEqual(Engine(m, 2).generate(prompts(2, 4, m.cfg.vocab_size, 3, "cpu"), 4).tokens.shape, (2, 5))


def make_tree(rows, files):
    """A tree shaped like a materialized engine tree: namespaced packages,
    entry shims, metadata and the runtime manifest."""
    d = tempfile.mkdtemp()
    for rel, text in files.items():
        p = os.path.join(d, rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "w") as f:
            f.write(textwrap.dedent(text))
    lines = ['bundle_id = "cacheon-materialized-v1"', 'abi_version = "cacheon-op-abi-v0"', ""]
    for r in rows:
        lines.append("[[ops]]")
        for k, v in r.items():
            lines.append(f"{k} = {json.dumps(v)}")
        lines.append("")
    with open(os.path.join(d, "manifest.toml"), "w") as f:
        f.write("\n".join(lines))
    return d


SILU_PKG = {
    "cacheon_c_t/__init__.py": "",
    "cacheon_c_t/kernels/__init__.py": "",
    "cacheon_c_t/kernels/act.py": """
        import torch
        import torch.nn.functional as F
        CALLS = []

        def good(x, out):
            CALLS.append(("good", x.shape[0]))
            d = x.shape[-1] // 2
            out.copy_(F.silu(x[:, :d]) * x[:, d:])

        def broken(x, out):
            CALLS.append(("broken", x.shape[0]))
            d = x.shape[-1] // 2
            out.copy_(x[:, :d] * x[:, d:])
        """,
    "entries/good.py": "from cacheon_c_t.kernels.act import good\n",
    "entries/broken.py": "from cacheon_c_t.kernels.act import broken\n",
}


class SeamTest(unittest.TestCase):
    def test_stock_when_no_tree(self):
        s = seam_mod.load_tree(None)
        self.assertEqual(s.resolve("norm.rmsnorm", {}).origin, "stock")
        rep = s.report()
        self.assertEqual(rep["attention.msa_block_score"]["status"], "unavailable")
        self.assertEqual(rep["activation.silu_and_mul"]["status"], "stock")

    def test_contribution_runs_through_the_seam(self):
        good = make_tree([{"slot": "activation.silu_and_mul", "variant": "default", "source": "entries/good.py", "entry": "good"}], SILU_PKG)
        broken = make_tree([{"slot": "activation.silu_and_mul", "variant": "default", "source": "entries/broken.py", "entry": "broken"}], SILU_PKG)
        toks = prompts(2, 6, 97, 3, "cpu")
        base = make_model(LLAMA, 2)[0].forward_full(toks)
        mg = make_model(LLAMA, 2, tree=good)[0]
        self.assertTrue(torch.allclose(mg.forward_full(toks), base, atol=1e-5))
        self.assertEqual(mg.seam.calls["activation.silu_and_mul"], {"tree:default": 2})
        mb = make_model(LLAMA, 2, tree=broken)[0]
        self.assertGreater((mb.forward_full(toks) - base).abs().max().item(), 1e-2)
        self.assertEqual(mb.seam.report()["activation.silu_and_mul"]["status"], "contributed")

    def test_variants_route_by_domain(self):
        files = dict(SILU_PKG)
        files["metadata/small.json"] = '{"max_num_tokens": 4}'
        files["metadata/large.json"] = '{"min_num_tokens": 5}'
        tree = make_tree([
            {"slot": "activation.silu_and_mul", "variant": "small", "source": "entries/good.py", "entry": "good",
             "metadata": "metadata/small.json"},
            {"slot": "activation.silu_and_mul", "variant": "large", "source": "entries/broken.py", "entry": "broken",
             "metadata": "metadata/large.json"},
        ], files)
        m = make_model(LLAMA, 2, tree=tree)[0]
        Engine(m, 2).generate(prompts(2, 6, 97, 3, "cpu"), 3)
        # Prefill has 12 tokens (large), each decode step 2 (small).
        self.assertEqual(m.seam.calls["activation.silu_and_mul"], {"tree:large": 2, "tree:small": 6})

    def test_decode_counts_only_its_own_calls(self):
        # What an engine session's decode frame carries: the slot calls of
        # the decode steps alone, so that a row serving only the prefill's
        # shapes shows as stock there.
        files = dict(SILU_PKG)
        files["metadata/large.json"] = '{"min_num_tokens": 5}'
        tree = make_tree([{"slot": "activation.silu_and_mul", "variant": "large", "source": "entries/good.py",
                           "entry": "good", "metadata": "metadata/large.json"}], files)
        m = make_model(LLAMA, 2, tree=tree)[0]
        eng = Engine(m, 2)
        eng.begin(prompts(2, 6, 97, 3, "cpu"), 3)
        _, calls = eng.decode_counted(3)
        self.assertEqual(calls, {"activation.silu_and_mul": {"stock": 6}, "attention.decode": {"stock": 6},
                                 "norm.rmsnorm": {"stock": 15}})
        self.assertEqual(m.seam.calls["activation.silu_and_mul"], {"tree:large": 2, "stock": 6})

    def test_dtype_restriction_falls_back_to_stock(self):
        tree = make_tree([{"slot": "activation.silu_and_mul", "source": "entries/broken.py", "entry": "broken",
                           "dtypes": ["bfloat16"]}], SILU_PKG)
        m = make_model(LLAMA, 2, tree=tree)[0]  # float32
        m.forward_full(prompts(1, 3, 97, 3, "cpu"))
        self.assertEqual(m.seam.calls["activation.silu_and_mul"], {"stock": 2})

    def test_rejections(self):
        bad = {
            "wrong bundle id": ('bundle_id = "x"\nabi_version = "cacheon-op-abi-v0"\n', {}),
            "escaping source": (None, [{"slot": "norm.rmsnorm", "source": "../x.py", "entry": "f"}]),
            "setup row": (None, [{"slot": "norm.rmsnorm", "source": "entries/good.py", "entry": "good", "setup": "s"}]),
            "missing entry": (None, [{"slot": "activation.silu_and_mul", "source": "entries/good.py", "entry": "nope"}]),
            "prepare missing": (None, [{"slot": "moe.fused_experts", "source": "entries/good.py", "entry": "good"}]),
            "unknown capability": (None, [{"slot": "activation.silu_and_mul", "source": "entries/good.py", "entry": "good",
                                           "metadata": "metadata/bad.json"}]),
        }
        files = dict(SILU_PKG)
        files["metadata/bad.json"] = '{"capabilities": {"colour": "blue"}}'
        for name, (manifest, rows) in bad.items():
            with self.subTest(name):
                tree = make_tree(rows or [], files)
                if manifest:
                    with open(os.path.join(tree, "manifest.toml"), "w") as f:
                        f.write(manifest)
                with self.assertRaises(seam_mod.SeamError):
                    seam_mod.load_tree(tree)

    def test_unavailable_slot_is_reported(self):
        tree = make_tree([{"slot": "attention.msa_block_score", "source": "entries/good.py", "entry": "good"}], SILU_PKG)
        rep = seam_mod.load_tree(tree).report()["attention.msa_block_score"]
        self.assertEqual((rep["status"], rep["rows"]), ("unavailable", ["tree:default"]))


def sha256_file(path):
    import hashlib
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


class NativeArtifactTest(unittest.TestCase):
    """Rows with cuda_sources run only from a sealed prebuild artifact."""

    CU = "csrc/k.cu"
    ROW = {"slot": "activation.silu_and_mul", "variant": "default", "source": "entries/good.py", "entry": "good",
           "cuda_sources": ["csrc/k.cu"]}

    def tree(self):
        files = dict(SILU_PKG)
        files[self.CU] = "// the declared source\nint cacheon_native_marker(void) { return 42; }\n"
        return make_tree([self.ROW], files)

    def artifact(self, tree, source_sha=None, lib_sha=None):
        """A sealed-artifact directory as the prebuild lays it out, holding
        a real shared library compiled here from the tree's source."""
        cc = shutil.which("gcc") or shutil.which("cc")
        if cc is None:
            self.skipTest("no C compiler to build a shared library")
        d = tempfile.mkdtemp()
        lib = os.path.join(d, "00-lib.so")
        subprocess.run([cc, "-x", "c", "-shared", "-fPIC", "-o", lib, os.path.join(tree, self.CU)], check=True)
        doc = {"schema": "prebuild-artifact-v1", "target": "cpu", "torch": torch.__version__,
               "libraries": [{"slot": self.ROW["slot"], "variant": "default", "path": "00-lib.so",
                              "sources": [{"path": self.CU, "sha256": source_sha or sha256_file(os.path.join(tree, self.CU)),
                                           "size": 1}]}],
               "files": [{"path": "00-lib.so", "sha256": lib_sha or sha256_file(lib), "size": os.path.getsize(lib)}]}
        with open(os.path.join(d, "artifact.json"), "w") as f:
            json.dump(doc, f)
        return d

    def test_without_an_artifact_the_row_is_refused(self):
        with self.assertRaisesRegex(seam_mod.SeamError, "no sealed prebuild artifact.*never compile"):
            seam_mod.load_tree(self.tree())

    def test_the_library_bound_by_content_is_loaded(self):
        tree = self.tree()
        s = seam_mod.load_tree(tree, self.artifact(tree))
        self.assertEqual(s.report()["activation.silu_and_mul"]["status"], "contributed")
        art = seam_mod.open_native(self.artifact(tree))
        path = art.load(art.bind(tree, [self.CU], "test"))
        self.assertIn(path, torch.ops.loaded_libraries)  # what torch.ops.load_library loaded

    def test_mismatches_are_refused(self):
        tree = self.tree()
        for name, kwargs, want in [
            ("other sources", {"source_sha": "0" * 64}, "holds no library built from"),
            ("library changed", {"lib_sha": "1" * 64}, "sealed " + "1" * 64),
        ]:
            with self.subTest(name):
                with self.assertRaisesRegex(seam_mod.SeamError, want):
                    seam_mod.load_tree(tree, self.artifact(tree, **kwargs))
        with self.assertRaisesRegex(seam_mod.SeamError, "native artifact"):
            seam_mod.load_tree(tree, tempfile.mkdtemp())


class StockMeetsContractsTest(unittest.TestCase):
    """The stock implementations pass the validator's own references."""

    def test_stock_slots(self):
        import cacheon_reference as ref
        for name in ("activation.silu_and_mul", "norm.rmsnorm", "attention.sdpa", "attention.decode", "moe.fused_experts"):
            slot = ref.get(name)
            entry, prep = stock.STOCK[name]
            for dtype_name in ("float32", "bfloat16"):
                dtype = ref.dtype_of(dtype_name)
                for shape in slot.catalog_shapes[:3]:
                    with self.subTest(slot=name, dtype=dtype_name, shape=shape):
                        p = slot.normalize(slot.params(shape))
                        v = slot.generate(p, dtype, 7)
                        outs = {k: s.allocate("cpu")[0] for k, s in slot.output_specs(p, dtype).items()}
                        args = []
                        for a in slot.call:
                            if a == "prepared":
                                args.append(prep(*[v[n] for n in slot.prepare_args]))
                            else:
                                args.append(outs[a] if a in outs else v[a])
                        entry(*args)
                        want = slot.truth(p, [v], dtype)
                        atol, rtol = ref.tolerance(dtype_name)
                        c = ref.worst(ref.compare_all(outs, want, slot.correctness, atol, rtol))
                        self.assertTrue(c.passed, c.reason)


def run_substrate(args, timeout=300):
    env = dict(os.environ, PYTHONPATH=os.path.join(HERE, ".."))
    r = subprocess.run([sys.executable, "-m", "cacheon_substrate"] + args, capture_output=True, text=True,
                       env=env, timeout=timeout)
    if r.returncode != 0:
        raise AssertionError(f"substrate {args} failed: {r.stderr}")
    return json.loads(r.stdout)


class TensorParallelTest(unittest.TestCase):
    """Two gloo ranks give the tokens of one process, through both collective
    slots, and a tree's collective contributions are what runs."""

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp()
        cls.llama = os.path.join(cls.dir, "llama")
        cls.mixtral = os.path.join(cls.dir, "mixtral")
        write_model(cls.llama, LLAMA, 21)
        write_model(cls.mixtral, MIXTRAL, 22)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def test_tp2_matches_tp1(self):
        for model in (self.llama, self.mixtral):
            base = run_substrate(["generate", "--model", model, "--batch", "2", "--new", "6"])
            for extra, slot in (([], "collective.all_reduce"), (["--allreduce-fusion"], "collective.ar_residual_rmsnorm")):
                with self.subTest(model=os.path.basename(model), fusion=bool(extra)):
                    got = run_substrate(["generate", "--model", model, "--batch", "2", "--new", "6", "--tp", "2"] + extra)
                    self.assertEqual(got["tokens"], base["tokens"])
                    self.assertEqual(list(got["slot_calls"][slot]), ["stock"])

    def test_contributed_collectives_run(self):
        files = {
            "cacheon_c_c/__init__.py": "",
            "cacheon_c_c/coll.py": """
                import torch.distributed as dist
                from torch.nn import functional as F

                def all_reduce(x, out, group):
                    out.copy_(x)
                    dist.all_reduce(out, group=group)

                def reduce_experts_prepare(w13, w2):
                    return (w13, w2)

                def reduce_experts(x, topk_ids, topk_weights, prepared, out, group):
                    w13, w2 = prepared
                    inter = w13.shape[1] // 2
                    out.zero_()
                    for t in range(x.shape[0]):
                        for j in range(topk_ids.shape[1]):
                            e = int(topk_ids[t, j])
                            h = w13[e] @ x[t]
                            out[t] += float(topk_weights[t, j]) * (w2[e] @ (F.silu(h[:inter]) * h[inter:]))
                    dist.all_reduce(out, group=group)
                """,
            "entries/ar.py": "from cacheon_c_c.coll import all_reduce\n",
            "entries/moe.py": "from cacheon_c_c.coll import reduce_experts, reduce_experts_prepare\n",
        }
        tree = make_tree([
            {"slot": "collective.all_reduce", "source": "entries/ar.py", "entry": "all_reduce"},
            {"slot": "moe.fused_experts_reduce", "source": "entries/moe.py", "entry": "reduce_experts",
             "prepare": "reduce_experts_prepare"},
        ], files)
        base = run_substrate(["generate", "--model", self.mixtral, "--batch", "2", "--new", "4"])
        got = run_substrate(["generate", "--model", self.mixtral, "--batch", "2", "--new", "4", "--tp", "2", "--tree", tree])
        self.assertEqual(got["tokens"], base["tokens"])
        self.assertEqual(list(got["slot_calls"]["collective.all_reduce"]), ["tree:default"])
        # reduce-first: the MoE output arrives reduced, so plain fused_experts never runs.
        self.assertEqual(list(got["slot_calls"]["moe.fused_experts_reduce"]), ["tree:default"])
        self.assertNotIn("moe.fused_experts", got["slot_calls"])


class ServeTest(unittest.TestCase):
    def test_serve_lines(self):
        d = tempfile.mkdtemp()
        write_model(d, LLAMA, 31)
        reqs = ['{"id": 1, "prompts": [[1, 2, 3], [4, 5, 6]], "max_new_tokens": 4}', '{"id": 2, "prompt": [999]}', "not json"]
        env = dict(os.environ, PYTHONPATH=os.path.join(HERE, ".."))
        r = subprocess.run([sys.executable, "-m", "cacheon_substrate.serve", "--engine-tree", d, "--model", d],
                           input="\n".join(reqs) + "\n", capture_output=True, text=True, env=env, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = [json.loads(x) for x in r.stdout.splitlines()]
        self.assertTrue(lines[0]["ready"])
        self.assertEqual(lines[0]["slots"]["attention.msa_block_score"], "unavailable")
        m, _ = make_model(LLAMA, 31)
        want = Engine(m, 2).generate(torch.tensor([[1, 2, 3], [4, 5, 6]]), 4).tokens.tolist()
        self.assertEqual(lines[1], {"id": 1, "tokens": want})
        self.assertIn("token ids must lie in", lines[2]["error"])
        self.assertIn("error", lines[3])


class IdentityTest(unittest.TestCase):
    def test_skips_and_orders(self):
        d = tempfile.mkdtemp()
        for rel in ("a/b.py", "a-c.py", "a.b", "__pycache__/x.pyc", "z.pyc", "._junk"):
            p = os.path.join(d, rel)
            os.makedirs(os.path.dirname(p), exist_ok=True)
            with open(p, "w") as f:
                f.write(rel)
        self.assertEqual(identity.files(d), ["a/b.py", "a-c.py", "a.b"])  # path-component order
        h1 = identity.content_hash(d)
        with open(os.path.join(d, "__pycache__", "y.pyc"), "w") as f:
            f.write("ignored")
        self.assertEqual(identity.content_hash(d), h1)
        with open(os.path.join(d, "a.b"), "w") as f:
            f.write("changed")
        self.assertNotEqual(identity.content_hash(d), h1)


if __name__ == "__main__":
    unittest.main()
