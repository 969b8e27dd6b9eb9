"""The hook client: the short-lived process each agent's lifecycle hook runs
(``engram-hook <agent>``). Standard library only, plus the pure capture package: it never
imports the service stack, so it starts and answers in tens of milliseconds."""
