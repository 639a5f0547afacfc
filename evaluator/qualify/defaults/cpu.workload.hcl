# The default workload of `cacheon qualify`: a short smoke run that fits
# the CPU lane (and a GPU) in seconds. It measures nothing a market would
# pay for; production workloads are sealed deployment inputs.
workload "cpu-smoke" {
  max_new_tokens = 8
  temperature    = 0
  warmup         = 2
  conditioning   = 1

  engine {
    tensor_parallel = 1
    cuda_graphs     = true
  }

  prompts {
    seed       = 1
    batches    = 8
    batch_size = 2
    prompt_len = 16
    vocab_size = 64
  }
}
