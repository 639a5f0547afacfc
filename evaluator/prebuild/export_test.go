package prebuild

// NeedToolchain is needToolchain for the external tests.
var NeedToolchain = needToolchain
