match command.split():
    case [action]:
        pass
    case [action, obj]:
        pass
    case Point(x=0, y=0) | Point(1, 2):
        pass
    case {"x": x, "y": [1, 2, *rest], **kw}:
        pass
    case -1 | 1.5 | -2+3j | "s" "t" if x > 0:
        pass
    case (a, b) as pair:
        pass
    case Color.RED | None | True:
        pass
    case _:
        pass
match = 1
match(x)
match[0]
