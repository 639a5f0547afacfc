print(f"{", ".join(f"{k}={v!r}" for k, v in d.items())}")
