stack "a" {
  kind    = "reference"
  catalog = "//catalog:targets.hcl"
}
stack "b" { # ERROR: One stack block required
  kind    = "reference"
  catalog = "//catalog:targets.hcl"
}
