"""The lab's benchmarks (`make bench`): outside the runtime package."""
