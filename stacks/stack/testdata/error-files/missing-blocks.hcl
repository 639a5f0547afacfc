stack "x" { # ERROR: Missing substrate block
  kind    = "reference"
  catalog = "//catalog:targets.hcl"
  arena {
    digest = "3333333333333333333333333333333333333333333333333333333333333333"
  }
  arena { # ERROR: Duplicate arena block
    digest = "3333333333333333333333333333333333333333333333333333333333333333"
  }
}
