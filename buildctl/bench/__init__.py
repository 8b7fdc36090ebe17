"""Serving benchmarks: `buildctl bench serve` (one run against an OpenAI-compatible endpoint, one JSON file)
and `buildctl compare` (two runs side by side: report.md, report.html and plots).

Modules, one job each: `runfile` (the versioned run schema, atomic write, strict read), `memory` (samplers
of device or process memory), `environment` (what the run ran on), `loadgen` (the load generator, AIPerf),
`serve` (one run: levels, samplers, file), `compare` (workload check, ratios, environment diff), `plots`
(matplotlib figures), `report` (Markdown and HTML), `cli` (the click commands).
"""
