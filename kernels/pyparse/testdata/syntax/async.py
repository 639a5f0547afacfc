async def f(a, /, b, *args, c=1, **kw) -> int:
    async with a as b, c:
        await g()
    async for x in y:
        yield x
    return [i async for i in aiter() if await i]
