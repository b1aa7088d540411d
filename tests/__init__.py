"""The test suite (a package, so test modules mirror the source tree without name clashes)."""
