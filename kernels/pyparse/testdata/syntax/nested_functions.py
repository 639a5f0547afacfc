def outer():
    def inner():
        return lambda: getattr(x, "y")
    class K:
        def m(self): return self.__class__
    return inner
