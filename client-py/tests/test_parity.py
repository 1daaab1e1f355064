"""Client and AsyncClient offer the same API: the same handles, methods and arguments (no service needed)."""

import inspect
import unittest

import dsh_sandbox as d

PAIRS = [(d.Client, d.AsyncClient), (d.Agents, d.AsyncAgents), (d.Agent, d.AsyncAgent), (d.Files, d.AsyncFiles),
         (d.Requests, d.AsyncRequests), (d.Terminals, d.AsyncTerminals), (d.Snapshots, d.AsyncSnapshots)]
# What only one side has: closing (close / aclose, and the context managers).
ONE_SIDED = {"close", "aclose", "__enter__", "__exit__", "__aenter__", "__aexit__"}


def public(cls: type) -> dict:
    return {name: inspect.signature(member) for name, member in vars(cls).items()
            if callable(member) and (not name.startswith("_") or name == "__init__") and name not in ONE_SIDED}


class ParityTest(unittest.TestCase):
    def test_every_sync_method_has_its_async_twin_with_the_same_arguments(self) -> None:
        for sync, asynchronous in PAIRS:
            mine, theirs = public(sync), public(asynchronous)
            self.assertEqual(sorted(mine), sorted(theirs), sync.__name__)
            for name, signature in mine.items():
                self.assertEqual(list(signature.parameters), list(theirs[name].parameters), f"{sync.__name__}.{name}")
                if name != "__init__":
                    self.assertTrue(inspect.iscoroutinefunction(getattr(asynchronous, name))
                                    or inspect.isasyncgenfunction(getattr(asynchronous, name)), name)

    def test_closing_and_terminals(self) -> None:
        self.assertTrue(callable(d.Client.close) and inspect.iscoroutinefunction(d.AsyncClient.aclose))
        for name in ("send", "resize", "signal", "read_until"):
            self.assertEqual(list(inspect.signature(getattr(d.Terminal, name)).parameters),
                             list(inspect.signature(getattr(d.AsyncTerminal, name)).parameters), name)
        self.assertTrue(callable(d.Terminals.close) and inspect.iscoroutinefunction(d.AsyncTerminals.close))


if __name__ == "__main__":
    unittest.main()
