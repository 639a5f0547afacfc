import a; import b;
x = 1; y = 2
