@triton.jit
def kernel(x_ptr, n: tl.constexpr, BLOCK: tl.constexpr = 128):
    pid = tl.program_id(axis=0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)

@x[0].y(z)
@functools.lru_cache(maxsize=None)
class A(B, metaclass=M):
    pass
