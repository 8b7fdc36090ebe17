"""Report writers: report.json (schema in docs/migrate.md), report.md and a self-contained
report.html. Every file is written to a temporary name and renamed into place at the end, so an
interrupted run leaves no report that claims to be complete.
"""

from __future__ import annotations

import html
import json
import os
from pathlib import Path

STATUSES = ("ok", "failed", "timeout", "needs-torch")
SEVERITIES = ("error", "warning", "info")
# The start of a not_compiled reason: a .cu / C / C++ file that other sources #include (pipeline.not_compiled).
INCLUDED_SOURCE = "source that other sources #include"
LEFT_OUT = "unit left out by --only: not compiled in this run"
INCLUDED_BY_LEFT_OUT = "included only by units --only left out: not compiled in this run"


def count(n: int, noun: str) -> str:
    """`n` and `noun`, plural unless n is 1: count(1, "unit") -> "1 unit", count(3, "unit") -> "3 units"."""
    return f"{n} {noun}{'' if n == 1 else 's'}"


def summarize(data: dict, fail_on: str) -> dict:
    """Counts over the report data and the exit code that --fail-on gives:
    {files, units, findings: {severity: {open, fixed}}, fixes: {fixup id: files}, compile: {arch:
    {status: n}}, unexplained: {arch: failed or timed-out units without `explained_by`}, baseline:
    {arch: {status: n}} (when run), exit_code}.

    fail_on "error": exit 1 when a unit failed or timed out for an arch, or an error finding is open in
    a file a unit compiles (the unit, or a header or source it includes); "warning": also when such a
    warning is open; "never": 0. Findings in files no unit compiles (a header nothing includes, a C/C++
    source without CUDA use) are reported and counted in `findings_not_compiled`, and meet no --fail-on:
    no compile of this run depends on them.
    """
    findings = {s: {"open": 0, "fixed": 0} for s in SEVERITIES}
    fixes: dict[str, int] = {}
    compiled: dict[str, dict[str, int]] = {a["name"]: {s: 0 for s in STATUSES} for a in data["archs"]}
    baseline: dict[str, dict[str, int]] = {a["name"]: {s: 0 for s in STATUSES} for a in data["archs"]}
    unexplained = {a["name"]: 0 for a in data["archs"]}
    gating = {s: 0 for s in SEVERITIES}
    outside = {s: 0 for s in SEVERITIES}
    for f in data["files"]:
        compiled_here = f["unit"] or f.get("not_compiled", "").startswith(("header: ", INCLUDED_SOURCE))
        for x in f["findings"]:
            findings[x["severity"]][x["status"]] += 1
            if x["status"] == "open":
                (gating if compiled_here else outside)[x["severity"]] += 1
        for fix in f["fixes"]:
            fixes[fix["id"]] = fixes.get(fix["id"], 0) + 1
        for key, table in (("compile", compiled), ("baseline", baseline)):
            for arch, result in f.get(key, {}).items():
                table[arch][result["status"]] += 1
        for arch, result in f["compile"].items():
            if result["status"] in ("failed", "timeout") and not result.get("explained_by"):
                unexplained[arch] += 1
    failed_units = sum(t["failed"] + t["timeout"] for t in compiled.values())
    code = 0
    if fail_on in ("error", "warning") and (failed_units or gating["error"]):
        code = 1
    if fail_on == "warning" and gating["warning"]:
        code = 1
    left_out = [f for f in data["files"] if f.get("not_compiled", "") in (LEFT_OUT, INCLUDED_BY_LEFT_OUT)]
    sources = [f for f in data["files"] if not f["unit"] and f["kind"] != "header" and f not in left_out]
    included = [f for f in sources if f.get("not_compiled", "").startswith(INCLUDED_SOURCE)]
    summary = {"files": len(data["files"]), "units": sum(1 for f in data["files"] if f["unit"]),
               "sources_not_compiled": len(sources) - len(included), "sources_included": len(included),
               "units_left_out": sum(1 for f in left_out if f["not_compiled"] == LEFT_OUT),
               "headers_not_included": sum(1 for f in data["files"] if f["kind"] == "header" and not f["unit"]
                                           and f.get("not_compiled", "").startswith("header that no unit")),
               "findings": findings, "findings_not_compiled": outside, "fixes": fixes, "compile": compiled, "unexplained": unexplained,
               "exit_code": code, "fail_on": fail_on}
    if data["options"]["baseline"]:
        summary["baseline"] = baseline
    return summary


def _failed_detail(timeouts: int, unexplained: int) -> str:
    """' (N timed out, M without a finding)' for the result line's failed count, '' when both are 0."""
    parts = ([f"{timeouts} timed out"] if timeouts else []) + ([f"{unexplained} without a finding"] if unexplained else [])
    return f" ({', '.join(parts)})" if parts else ""


def summary_line(s: dict, report_path: Path) -> str:
    """The run's one result line: units, per arch the compile counts, sources left out, open findings,
    the report's path, and, when --fail-on was met, that it was and the exit code 1."""
    unexplained = s.get("unexplained", {})
    per_arch = ", ".join(f"{a}: {c['ok']} ok / {c['failed'] + c['timeout']} failed"
                         + _failed_detail(c["timeout"], unexplained.get(a, 0))
                         + f" / {c['needs-torch']} needs-torch" for a, c in s["compile"].items())
    left = s.get("sources_not_compiled", 0)
    not_compiled = f"; {count(left, 'C/C++ source')} without CUDA use not compiled (report: Not compiled)" if left else ""
    within = s.get("sources_included", 0)
    if within:
        not_compiled += f"; {count(within, 'source')} compiled within the sources that #include {'it' if within == 1 else 'them'}"
    if s.get("units_left_out"):
        not_compiled += f"; {count(s['units_left_out'], 'unit')} left out by --only"
    outside = s.get("findings_not_compiled", {})
    aside = (f" ({outside['error']} error, {outside['warning']} warning in files no unit compiles)"
             if outside.get("error") or outside.get("warning") else "")
    line = (f"migrate: {count(s['units'], 'unit')}; {per_arch}{not_compiled}; findings open: "
            f"{s['findings']['error']['open']} error, {s['findings']['warning']['open']} warning{aside}; "
            f"report: {report_path} (also report.md, report.json)")
    if s["exit_code"]:
        failed = sum(c["failed"] + c["timeout"] for c in s["compile"].values())
        levels = ("error",) if s["fail_on"] == "error" else ("error", "warning")
        gating = sum(s["findings"][sev]["open"] - outside.get(sev, 0) for sev in levels)
        why = [f"{count(failed, 'failed compile')}"] if failed else []
        why += [f"{gating} open finding{'' if gating == 1 else 's'} at or above {s['fail_on']} in compiled files"] if gating else []
        line += f"; --fail-on {s['fail_on']} met (exit 1): {' and '.join(why)}"
    return line


def _atomic_write(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.partial")
    with open(tmp, "w", encoding="utf-8") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)


def tools_text(tools: dict) -> str:
    """The report's tools line: hipcc's, hipify-perl's and hipify-clang's versions (or why hipify-clang
    was not used), from report.json's `tools`."""
    return (f"{tools['hipcc'] or 'hipcc ?'}; hipify-perl {tools['hipify_perl'] or '?'}; "
            f"hipify-clang {tools.get('hipify_clang') or '?'}")


def _project_flags(data: dict) -> list[str]:
    """The report's "Project flags" lines: where the units' include folders and defines came from."""
    pf = data.get("options", {}).get("project_flags")
    if not pf:
        return []
    if pf["source"] == "inferred":
        where = "inferred from the build files (CMakeLists.txt, Makefiles, setup.py)"
    elif pf["source"] == "none":
        where = ("none: the tree has none of the build files migrate reads (CMakeLists.txt, Makefiles, setup.py) "
                 "and no --compile-commands was given, so only the tree's own folders and --include-dir / --define apply")
    else:
        where = f"`{pf['source']}`: its entries give {count(pf['units'], 'source')} of the tree their own folders and defines"
    out = ["", "## Project flags", "", f"- source: {where}"]
    if pf["include_dirs"] or pf["defines"]:
        out.append("- every unit: " + ", ".join([f"`-I {d}`" for d in pf["include_dirs"]] + [f"`-D{d}`" for d in pf["defines"]]))
    for d in pf.get("inferred_defines", []):
        out.append(f"- `-D{d['define']}` inferred: {d['reason']}")
    for f in pf.get("extension_flags", []):
        out.append(f"- `{f['flag']}` for the PyTorch extension units: {f['reason']}")
    if pf.get("outside_tree"):
        out.append(f"- {count(len(pf['outside_tree']), 'include folder')} outside the tree left out (the dev image has its "
                   "own toolkit and system headers): " + ", ".join(f"`{d}`" for d in pf["outside_tree"]))
    for path in pf.get("unread_options", []):
        out.append(f"- response file `{path}` not found beside the database nor in the tree: its flags are missing "
                   "(copy the build folder next to compile_commands.json)")
    return out


def failures(data: dict) -> list[tuple[str, list[str], dict]]:
    """The failed or timed-out compiles of the report, one entry per unit and first error:
    (unit path, the archs that gave that first error, the compile result of the first of them)."""
    found = []
    for f in data["files"]:
        by_error: dict[str, list[str]] = {}
        for arch, result in f["compile"].items():
            if result["status"] in ("failed", "timeout"):
                by_error.setdefault(result["first_error"], []).append(arch)
        found += [(f["path"], archs, f["compile"][archs[0]]) for archs in by_error.values()]
    return found


def shown(data: dict, first_error: str) -> str:
    """A compile result's first error as the reports show it: paths in OUT (the run's folder as the
    recipe saw it, report.json's `out`) relative to it (hip/k.cu:3:1: error: ...), so they name the
    same file wherever OUT is mounted."""
    return first_error.replace(f"{data['out'].rstrip('/')}/", "") if data.get("out") else first_error


def _why(result: dict) -> str:
    """How a failed compile result is explained, for the reports: the finding's rule and place, or
    that none explains it."""
    why = result.get("explained_by")
    return f"explained by `{why['rule']}` at {why['file']}:{why['line']}" if why else "**without a finding**"


def _findings_md(path: str, findings: list[dict]) -> list[str]:
    """Report.md lines of one file's findings: each open one with its hint or suggestion; the fixed
    ones one line per rule and reason, with their lines."""
    out: list[str] = []
    fixed: dict[tuple[str, str], list[dict]] = {}
    for x in findings:
        if x["status"] == "fixed":
            fixed.setdefault((x["rule"], x.get("note", "")), []).append(x)
            continue
        rule = f"[`{x['rule']}`]({x['doc']})" if x.get("doc") else f"`{x['rule']}`"
        out.append(f"- {path}:{x['line']} [{x['severity']}] {rule}: {x['message']}")
        out.append(f"  - suggested: `{x['suggestion']}`" if x["suggestion"] else f"  - hint: {x['hint']}")
        if x.get("note"):
            out.append(f"  - note: {x['note']}")
    for (rule, note), xs in fixed.items():
        lines = ", ".join(str(x["line"]) for x in xs)
        out.append(f"- {path}:{lines} [fixed] `{rule}`" + (f": {note}" if note else ""))
    return out


def to_markdown(data: dict) -> str:
    """The report as Markdown: summary tables, the failed compiles with what explains each, then per
    file its compile status per arch, open findings with suggested rewrites, the fixed ones by rule,
    and applied fixes."""
    s = data["summary"]
    archs = [a["name"] for a in data["archs"]]
    out = [f"# Migration report: {data['source']}", "",
           "Archs: " + ", ".join(f"{a['name']} (wave{a['wavefront']}, LDS {a['lds_bytes']} B)" for a in data["archs"]) + ". "
           f"Tools: {tools_text(data['tools'])}. "
           f"Wall time {data['timings']['wall_s']} s.", "",
           "## Compile results (units per arch)", "",
           "| arch | " + " | ".join(STATUSES) + " | failed without a finding" + (" | baseline ok |" if "baseline" in s else " |"),
           "|---" * (len(STATUSES) + 2 + ("baseline" in s)) + "|"]
    for arch in archs:
        # "-": a report of a recipe older than explained_by (an image built before it) has no count
        row = [str(s["compile"][arch][st]) for st in STATUSES] + [str(s["unexplained"][arch]) if "unexplained" in s else "-"]
        if "baseline" in s:
            row.append(f"{s['baseline'][arch]['ok']} (delta {s['compile'][arch]['ok'] - s['baseline'][arch]['ok']:+d})")
        out.append(f"| {arch} | " + " | ".join(row) + " |")
    failed = failures(data)
    if failed:
        out += ["", "## Failed compiles", ""]
        out += [f"- {path} ({', '.join(archs)}, {result['status']}): `{shown(data, result['first_error'])}` ({_why(result)})"
                for path, archs, result in failed]
    out += ["", "## Findings", "", "| severity | open | fixed |", "|---|---|---|"]
    out += [f"| {sev} | {s['findings'][sev]['open']} | {s['findings'][sev]['fixed']} |" for sev in SEVERITIES]
    outside = s.get("findings_not_compiled", {})
    if any(outside.values()):
        out += ["", "Of the open ones, in files no unit compiles (reported, meeting no --fail-on): "
                + ", ".join(f"{outside[sev]} {sev}" for sev in SEVERITIES) + "."]
    if data["defines"]:
        out += ["", "## Build defines", ""]
        out += [f"- `{d['name']}`: " + ", ".join(f"{a}={v or '1'}" for a, v in d["values"].items()) + f" ({d['reason']})"
                for d in data["defines"]]
    out += _project_flags(data)
    encoded = [(f["path"], f["encoding"]) for f in data["files"] if f.get("encoding", "utf-8") != "utf-8"]
    if encoded or data.get("skipped"):
        out += ["", "## Input notes", ""]
        out += [f"- {p}: " + ("UTF-8 with a byte-order mark, left out of the cuda/ and hip/ copies" if how == "utf-8-bom"
                              else "not UTF-8, decoded as latin-1 (the cuda/ and hip/ copies keep its bytes)")
                for p, how in encoded]
        out += [f"- skipped {s}" for s in data.get("skipped", [])]
    left = [f for f in data["files"] if f.get("not_compiled")]
    if left:
        out += ["", "## Not compiled", "", f"{count(len(left), 'file')} of the tree {'is' if len(left) == 1 else 'are'} "
                "not compiled as units:", ""]
        out += [f"- {f['path']}: {f['not_compiled']}" for f in left]
    out += ["", "## Files", ""]
    for f in data["files"]:
        if not (f["unit"] or f["findings"] or f["fixes"]):
            continue
        out += [f"### {f['path']}", ""]
        made = f.get("translator", {})
        if made:
            where = f" (`torch/{made['hipified_path']}`)" if made.get("hipified_path") else ""
            out.append(f"- translator: {made['name']}{where}" + (f": {made['reason']}" if made.get("reason") else ""))
        if f.get("torch"):
            t = f["torch"]
            out.append(f"- also translated by {t['translator']['name']} (`torch/{t['translator']['hipified_path']}`) for the "
                       "PyTorch extension units" + (f", fixes: {', '.join(x['id'] for x in t['fixes'])}" if t["fixes"] else ""))
        if f["unit"]:
            own = [f"`-I {d}`" for d in f.get("include_dirs", [])] + [f"`-D{d}`" for d in f.get("defines", [])] + \
                [f"`-U{d}`" for d in f.get("undefines", [])]
            if own:
                out.append("- flags: " + " ".join(own))
            for arch in archs:
                r = f["compile"].get(arch, {})
                line = f"- {arch}: **{r.get('status', '-')}**"
                if r.get("first_error"):
                    line += f": `{shown(data, r['first_error'])}`"
                if r.get("explained_by"):
                    why = r["explained_by"]
                    line += f" (explained by `{why['rule']}` at {why['file']}:{why['line']}: {why['how']})"
                if r.get("fixits"):
                    line += f" (clang's narrowing casts inserted at {', '.join(r['fixits'])})"
                if r.get("rdc"):
                    line += " (as relocatable device code, -fgpu-rdc: it uses a device symbol another unit defines)"
                for m in r.get("doctor", []):
                    line += f" (doctor: [{m['id']}]({m['doc']}) {m['title']})"
                if f.get("host_only"):
                    line += " (host code only: compiled once as C++, no device pass)"
                if arch in f.get("baseline", {}):
                    base = f["baseline"][arch]
                    line += f" (baseline: {base['status']}" + (f": `{shown(data, base['first_error'])}`)"
                                                                if base.get("first_error") else ")")
                out.append(line)
        out += _findings_md(f["path"], f["findings"])
        for fix in f["fixes"]:
            where = f", migrated line(s) {', '.join(map(str, fix['lines']))}" if fix["lines"] else ""
            out += [f"- fix `{fix['id']}` ({fix['title']}){where}:", "",
                    "```diff", fix["diff"], "```"]
        out.append("")
    return "\n".join(out) + "\n"


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)


CSS = """body{font-family:sans-serif;margin:1.5em;color:#222}table{border-collapse:collapse;margin:.5em 0}
td,th{border:1px solid #bbb;padding:2px 8px;text-align:left}.ok{background:#d9f2d9}.failed,.timeout{background:#f8d0d0}
.needs-torch{background:#eee}.error{color:#a00}.warning{color:#a60}.info{color:#555}.fixed{color:#070}
pre{background:#f6f6f6;padding:6px;overflow-x:auto}details{margin:.3em 0}code{background:#f3f3f3}"""


def to_html(data: dict) -> str:
    """The report as one self-contained HTML page (inline CSS, no scripts, every value escaped)."""
    s = data["summary"]
    archs = [a["name"] for a in data["archs"]]
    parts = ["<!DOCTYPE html><html><head><meta charset='utf-8'><title>Migration report</title>",
             f"<style>{CSS}</style></head><body>", f"<h1>Migration report: {_e(data['source'])}</h1>",
             "<p>Archs: " + _e(", ".join(f"{a['name']} (wave{a['wavefront']}, LDS {a['lds_bytes']} B)" for a in data["archs"]))
             + f". Tools: {_e(tools_text(data['tools']))}. "
             f"Wall time {_e(data['timings']['wall_s'])} s.</p>", "<h2>Compile results</h2><table><tr><th>arch</th>"]
    parts += [f"<th>{_e(st)}</th>" for st in STATUSES]
    parts.append("<th>baseline ok</th></tr>" if "baseline" in s else "</tr>")
    for arch in archs:
        parts.append(f"<tr><td>{_e(arch)}</td>" + "".join(f"<td>{s['compile'][arch][st]}</td>" for st in STATUSES))
        parts.append(f"<td>{s['baseline'][arch]['ok']}</td></tr>" if "baseline" in s else "</tr>")
    parts.append("</table>")
    failed = failures(data)
    if failed:
        parts.append("<h2>Failed compiles</h2><table><tr><th>unit</th><th>archs</th><th>first error</th>"
                     "<th>explained by</th></tr>")
        for path, fail_archs, result in failed:
            why = result.get("explained_by")
            parts.append(f"<tr><td><a href='#f-{_e(path).replace('/', '-')}'>{_e(path)}</a></td>"
                         f"<td>{_e(', '.join(fail_archs))}</td><td><code>{_e(shown(data, result['first_error']))}</code></td>"
                         + (f"<td><code>{_e(why['rule'])}</code> at {_e(why['file'])}:{why['line']}</td>" if why
                            else "<td class='failed'>no finding</td>") + "</tr>")
        parts.append("</table>")
    parts.append("<h2>Findings</h2><table><tr><th>severity</th><th>open</th><th>fixed</th></tr>")
    parts += [f"<tr><td class='{sev}'>{sev}</td><td>{s['findings'][sev]['open']}</td><td>{s['findings'][sev]['fixed']}</td></tr>"
              for sev in SEVERITIES]
    parts.append("</table>")
    flag_lines = [line[2:].replace("`", "") for line in _project_flags(data) if line.startswith("- ")]
    if flag_lines:
        parts.append("<h2>Project flags</h2><ul>" + "".join(f"<li>{_e(line)}</li>" for line in flag_lines) + "</ul>")
    parts.append("<h2>Files</h2><table><tr><th>file</th>" + "".join(f"<th>{_e(a)}</th>" for a in archs)
                 + "<th>open findings</th><th>fixes</th></tr>")
    for f in data["files"]:
        if not (f["unit"] or f["findings"] or f["fixes"]):
            continue
        anchor = "f-" + _e(f["path"]).replace("/", "-")
        cells = "".join(f"<td class='{_e(f['compile'].get(a, {}).get('status', ''))}'>{_e(f['compile'].get(a, {}).get('status', '-'))}</td>"
                        for a in archs)
        open_n = sum(1 for x in f["findings"] if x["status"] == "open")
        parts.append(f"<tr><td><a href='#{anchor}'>{_e(f['path'])}</a></td>{cells}<td>{open_n}</td><td>{len(f['fixes'])}</td></tr>")
    parts.append("</table>")
    left = [f for f in data["files"] if f.get("not_compiled")]
    if left:
        parts.append(f"<h2>Not compiled</h2><p>{count(len(left), 'file')} of the tree not compiled as units:</p><ul>"
                     + "".join(f"<li><code>{_e(f['path'])}</code>: {_e(f['not_compiled'])}</li>" for f in left)
                     + "</ul>")
    for f in data["files"]:
        if not (f["unit"] or f["findings"] or f["fixes"]):
            continue
        anchor = "f-" + _e(f["path"]).replace("/", "-")
        parts.append(f"<h3 id='{anchor}'>{_e(f['path'])}</h3>")
        for arch in archs:
            r = f["compile"].get(arch)
            if r:
                parts.append(f"<div>{_e(arch)}: <span class='{_e(r['status'])}'>{_e(r['status'])}</span>"
                             + (f" <code>{_e(shown(data, r['first_error']))}</code>" if r["first_error"] else "")
                             + (f" <span class='info'>explained by <code>{_e(r['explained_by']['rule'])}</code> at "
                                f"{_e(r['explained_by']['file'])}:{r['explained_by']['line']}</span>"
                                if r.get("explained_by") else "")
                             + "".join(f" <span class='info'>doctor: <a href='{_e(m['doc'])}'><b>{_e(m['id'])}</b></a> "
                                       f"{_e(m['title'])}: {_e(m['fix'])}</span>" for m in r.get("doctor", []))
                             + (" <span class='info'>host code only: compiled once as C++, no device pass</span>"
                                if f.get("host_only") else "")
                             + (f" (baseline: {_e(f['baseline'][arch]['status'])}"
                                + (f" <code>{_e(shown(data, f['baseline'][arch]['first_error']))}</code>"
                                   if f["baseline"][arch].get("first_error") else "") + ")"
                                if arch in f.get("baseline", {}) else "")
                             + "</div>")
        if f["findings"]:
            parts.append("<ul>")
            for x in f["findings"]:
                cls = "fixed" if x["status"] == "fixed" else x["severity"]
                rule = (f"<a href='{_e(x['doc'])}'><code>{_e(x['rule'])}</code></a>" if x.get("doc")
                        else f"<code>{_e(x['rule'])}</code>")
                parts.append(f"<li><span class='{cls}'>{_e(cls)}</span> line {x['line']} {rule}: "
                             f"{_e(x['message'])}<br><code>{_e(x['text'])}</code>"
                             + (f"<br>suggested: <code>{_e(x['suggestion'])}</code>" if x["suggestion"] and x["status"] == "open" else "")
                             + (f"<br>hint: {_e(x['hint'])}" if x["status"] == "open" else "")
                             + (f"<br>note: {_e(x['note'])}" if x.get("note") else "") + "</li>")
            parts.append("</ul>")
        for fix in f["fixes"]:
            parts.append(f"<details><summary>fix <code>{_e(fix['id'])}</code>: {_e(fix['title'])}</summary>"
                         f"<pre>{_e(fix['diff'])}</pre></details>")
        if f["hipify_warnings"]:
            parts.append("<details><summary>hipify-perl warnings</summary><pre>"
                         + _e("\n".join(f"{w['line']}: {w['message']}" for w in f["hipify_warnings"])) + "</pre></details>")
    parts.append("</body></html>\n")
    return "".join(parts)


def remove_reports(out: Path) -> None:
    """Delete report files of an earlier run (so a stale report never outlives a new, failed run)."""
    for name in ("report.json", "report.md", "report.html"):
        (out / name).unlink(missing_ok=True)


def write_all(out: Path, data: dict) -> None:
    """Write report.md and report.html, then report.json last (it carries "complete": true)."""
    _atomic_write(out / "report.md", to_markdown(data))
    _atomic_write(out / "report.html", to_html(data))
    _atomic_write(out / "report.json", json.dumps(data, indent=1, sort_keys=False) + "\n")
