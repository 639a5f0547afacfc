def f[T: int, *Ts, **P](x: list[T], *a: *Ts, **k: P.kwargs) -> dict[str, T | None]: ...
type Alias[K] = dict[K, list[K]]
class C[T](Generic[T]): x: int = 1
v: "Fwd"
(w): int = 2
a.b: int
