#!/usr/bin/env python3
"""Compile cost of `#[toolbox]` and `#[toolbox(json)]` (issues #6, #14): one crate of N tools
(100 by default) in five variants, all depending on circuit-breaker:

  plain        the methods, no macro;
  toolbox      the same methods under `#[toolbox]`;
  json         the same methods under `#[toolbox(json)]` (argument structs, schemas, dispatcher);
  hand         plain methods plus, per tool, a hand-written argument struct deriving
               serde::Deserialize and schemars::JsonSchema (what `json` saves a user writing);
  toolbox+hand `#[toolbox]` plus the same hand-written structs (json's like-for-like).

Each variant is timed two ways, R runs each (3 by default), medians:

  full  the crate alone rebuilt from nothing (`cargo clean -p <crate>` then `cargo build`);
  edit  the rebuild after one tool's body changed (tool N/2's format string, a new text each
        run), as a developer iterating on one tool pays it (incremental, as `cargo build`'s
        dev profile has it unless CARGO_INCREMENTAL says otherwise).

The crates are generated under target/compile-cost/ with their own target dir there; every
dependency (circuit-breaker, syn, serde, schemars, ...) is built first, untimed, and the
workspace's Cargo.lock is copied in so the versions are the workspace's. Runs are interleaved
(every variant once per run) so the machine's noise spreads over all of them.

Issue 14's targets: toolbox/plain full at most 1.5x; json at most hand + 20% (json/hand full at
most 1.2x; json/(toolbox+hand) is the same question with the macro on both sides).

Usage: python3 circuit-breaker/benches/compile_cost.py [--tools N] [--runs R] [--optimized-macros]
"""

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

VARIANTS = ("plain", "toolbox", "json", "hand", "toolbox+hand")


def crate_name(variant: str) -> str:
    return "cost_" + variant.replace("+", "_")


def annotated(variant: str) -> bool:
    return variant in ("toolbox", "json", "toolbox+hand")


def hand_structs(variant: str) -> bool:
    return variant in ("hand", "toolbox+hand")


def body(i: int, edit: int) -> str:
    """Tool i's body; `edit` changes its text (the one-edited-tool rebuild)."""
    tag = f"{i}" if edit == 0 else f"{i}-edit{edit}"
    return (
        f"        if input.is_empty() {{\n"
        f"            return Err(std::io::Error::from(std::io::ErrorKind::NotFound));\n"
        f"        }}\n"
        f'        Ok(format!("{tag}:{{input}}:{{}}", self.seed))\n'
    )


def tool(i: int, variant: str, edited: int, edit: int) -> str:
    """One tool method; every 4th has an alternative through an adapter (toolbox variants)."""
    attr = ""
    if annotated(variant):
        alternative = ""
        if i % 4 == 0 and i > 0:
            alternative = (
                f'alternatives(tool_{i - 1}(method = "the neighbour", '
                f'degradation = "slower", via = adapter_{i})), '
            )
        attr = (
            f'    #[tool(provides = "capability number {i}", {alternative}'
            f'fallback = "ask the user for result {i}")]\n'
        )
    # The parameter's doc is the schema's description; `json` takes it from the parameter,
    # the hand-written structs from their field. Only the macro can read a parameter's doc.
    param_doc = "        /// The text to work on.\n" if variant == "json" else ""
    adapter = ""
    if i % 4 == 0 and i > 0:
        adapter = (
            f"    pub fn adapter_{i}(&self, input: &str) -> Result<String, std::io::Error> {{\n"
            f"        self.tool_{i - 1}(input)\n"
            f"    }}\n\n"
        )
    return (
        f"    /// Tool number {i}.\n"
        f"{attr}"
        f"    pub fn tool_{i}(\n        &self,\n{param_doc}        input: &str,\n"
        f"    ) -> Result<String, std::io::Error> {{\n"
        f"{body(i, edit if i == edited else 0)}"
        f"    }}\n\n"
        f"{adapter}"
    )


def hand_struct(i: int) -> str:
    return (
        f"/// The arguments of tool number {i}.\n"
        f"#[derive(serde::Deserialize, schemars::JsonSchema)]\n"
        f"#[serde(deny_unknown_fields)]\n"
        f"pub struct Tool{i}Args {{\n"
        f"    /// The text to work on.\n"
        f"    pub input: String,\n"
        f"}}\n\n"
    )


def source(variant: str, tools: int, edit: int) -> str:
    edited = tools // 2
    head = "use agent_circuit_breaker::toolbox;\n\n" if annotated(variant) else ""
    attr = {"toolbox": "#[toolbox]\n", "toolbox+hand": "#[toolbox]\n",
            "json": "#[toolbox(json)]\n"}.get(variant, "")
    methods = "".join(tool(i, variant, edited, edit) for i in range(tools))
    structs = "".join(hand_struct(i) for i in range(tools)) if hand_structs(variant) else ""
    if annotated(variant):
        use = ("pub fn touch() -> usize {\n"
               "    GuardedTools::new(Tools { seed: 1 }).expeditor().tools().count()\n}\n")
    else:
        use = ("pub fn touch() -> usize {\n"
               "    Tools { seed: 1 }.tool_0(\"x\").map_or(0, |s| s.len())\n}\n")
    return (
        f"//! Generated by compile_cost.py: {tools} tools, variant {variant}.\n\n"
        f"{head}/// The toolbox.\npub struct Tools {{\n    seed: u64,\n}}\n\n"
        f"{attr}impl Tools {{\n{methods}}}\n\n{structs}{use}"
    )


def write_crate(path: Path, variant: str, tools: int, optimized: bool) -> None:
    (path / "src").mkdir(parents=True, exist_ok=True)
    runtime = (ROOT / "circuit-breaker").as_posix()
    # Optionally build proc macros (and syn, darling) optimized, as a user can choose to.
    profile = "\n[profile.dev.build-override]\nopt-level = 3\n" if optimized else ""
    deps = f'agent-circuit-breaker = {{ path = "{runtime}" }}\n'
    if hand_structs(variant):
        # As circuit-breaker itself has them, so the build shares their artifacts.
        deps += ('serde = { version = "1", features = ["derive"] }\n'
                 'schemars = { version = "1", default-features = false, '
                 'features = ["derive", "std"] }\n')
    (path / "Cargo.toml").write_text(
        f'[package]\nname = "{crate_name(variant)}"\nversion = "0.0.0"\nedition = "2024"\n'
        f'publish = false\n\n[dependencies]\n{deps}\n[workspace]\n{profile}'
    )
    lock = ROOT / "Cargo.lock"
    if lock.exists():
        shutil.copyfile(lock, path / "Cargo.lock")
    (path / "src" / "lib.rs").write_text(source(variant, tools, 0))


def cargo(args, cwd: Path, target: Path) -> float:
    env = dict(os.environ, CARGO_TARGET_DIR=str(target), CARGO_TERM_COLOR="never")
    start = time.perf_counter()
    done = subprocess.run(["cargo", *args], cwd=cwd, env=env,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        sys.stderr.write(done.stderr)
        raise SystemExit(f"cargo {' '.join(args)} failed in {cwd}")
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tools", type=int, default=100)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--optimized-macros", action="store_true",
                        help="build proc macros with opt-level 3 ([profile.dev.build-override])")
    parser.add_argument("--only", nargs="*", choices=VARIANTS, default=list(VARIANTS),
                        help="the variants to time (default: all)")
    args = parser.parse_args()

    base = ROOT / "target" / "compile-cost"
    target = base / ("target-optimized" if args.optimized_macros else "target")
    paths = {}
    for variant in args.only:
        path = base / crate_name(variant)
        shutil.rmtree(path, ignore_errors=True)
        write_crate(path, variant, args.tools, args.optimized_macros)
        paths[variant] = path

    # Dependencies (circuit-breaker, syn, serde, schemars, ...) once, untimed; this also
    # checks that every variant compiles.
    for variant, path in paths.items():
        cargo(["build", "--quiet"], path, target)

    full = {v: [] for v in paths}
    edit = {v: [] for v in paths}
    for _ in range(args.runs):
        for variant, path in paths.items():
            cargo(["clean", "--quiet", "-p", crate_name(variant)], path, target)
            full[variant].append(cargo(["build", "--quiet"], path, target))
    for run in range(1, args.runs + 1):
        for variant, path in paths.items():
            (path / "src" / "lib.rs").write_text(source(variant, args.tools, run))
            edit[variant].append(cargo(["build", "--quiet"], path, target))

    med = {v: (statistics.median(full[v]), statistics.median(edit[v])) for v in paths}
    macros = "optimized" if args.optimized_macros else "debug"
    incremental = os.environ.get("CARGO_INCREMENTAL", "dev profile default (on)")
    print(f"tools: {args.tools}, runs: {args.runs}, medians (cargo build, debug, {macros} proc "
          f"macros, dependencies prebuilt, incremental: {incremental})")
    print(f"edit = rebuild after changing tool_{args.tools // 2}'s body")
    print()
    print(f"| {'variant':<12} | {'full (s)':>9} | {'edit (s)':>9} | full runs | edit runs |")
    print(f"|{'-' * 14}|{'-' * 11}|{'-' * 11}|---|---|")
    for v in paths:
        runs_f = ", ".join(f"{t:.3f}" for t in full[v])
        runs_e = ", ".join(f"{t:.3f}" for t in edit[v])
        print(f"| {v:<12} | {med[v][0]:>9.3f} | {med[v][1]:>9.3f} | {runs_f} | {runs_e} |")
    print()
    ratios = [
        ("toolbox / plain", "toolbox", "plain", "target full <= 1.5x"),
        ("json / hand", "json", "hand", "target full <= 1.2x"),
        ("json / toolbox+hand", "json", "toolbox+hand", "the same with the macro on both sides"),
        ("json / plain", "json", "plain", ""),
        ("hand / plain", "hand", "plain", ""),
        ("json / toolbox", "json", "toolbox", "what the dispatcher adds"),
    ]
    print(f"| {'ratio':<20} | {'full':>6} | {'edit':>6} | note |")
    print(f"|{'-' * 22}|{'-' * 8}|{'-' * 8}|---|")
    for label, a, b, note in ratios:
        if a in med and b in med:
            print(f"| {label:<20} | {med[a][0] / med[b][0]:>5.2f}x | "
                  f"{med[a][1] / med[b][1]:>5.2f}x | {note} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
