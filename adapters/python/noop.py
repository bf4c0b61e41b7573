#!/usr/bin/env python3
"""A no-op adapter in Python: each session keeps its values in a dict of its own process (each
client reads back what it wrote, as the shootout's clients do). What a run through it measures is
the protocol and the Python helper's cost per message; `bench/adapter-overhead.sh` sets it beside
the compiled no-op adapter and `mem:`."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dyno_adapter as d  # noqa: E402


class Noop(d.Adapter):
    name = "noop (Python)"
    durability = "none (a dict per process)"

    def __init__(self, role, namespace, options):
        super().__init__(role, namespace, options)
        self.values = {}

    def open(self):
        return "noop"

    def put(self, key, value):
        self.values[key] = value

    def get(self, key):
        try:
            return self.values[key]
        except KeyError:
            raise d.NotFound("no key %d" % key)

    def delete(self, key):
        if self.values.pop(key, None) is None:
            raise d.NotFound("no key %d" % key)


if __name__ == "__main__":
    d.run(Noop)
