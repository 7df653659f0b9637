"""The sweep engine: spec, plan, price, points, rounds, journal, guards."""
