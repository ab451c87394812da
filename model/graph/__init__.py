"""The dependency graph of a selection (time range, phase or request): host calls, driver
submissions, transfers and device ops as nodes, typed edges with their latency, the critical
path; repeated structure folded into groups; a layered layout; request lifecycles and what-if
replays. Qt-free: the app draws what it computes, tests run it headless."""
