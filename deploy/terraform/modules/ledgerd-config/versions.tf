terraform {
  # Provider-free on purpose: everything here is string rendering, so the
  # module can be planned, tested and rendered offline.
  required_version = ">= 1.6.0"
}
