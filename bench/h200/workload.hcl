# The H200 measurement workload: the 8-layer model of bench/h200/run.sh
# (492 M parameters, bf16), batch 32, 128-token prompts, 128 decode steps
# per window (graph-replayed), 8 timed windows per read.
workload "h200-decode" {
  max_new_tokens = 129
  temperature    = 0
  warmup         = 3
  conditioning   = 1

  engine {
    tensor_parallel = 1
    cuda_graphs     = true
  }

  prompts {
    seed       = 11
    batches    = 11
    batch_size = 32
    prompt_len = 128
    vocab_size = 32000
  }
}
