"""`botgrpo bench`: benchmarks that print figures measured side by side in one run.

Each benchmark registers itself from its own module under botgrpo_cli/cli/bench_*.py.
"""

import typer

bench_app = typer.Typer(help="Benchmarks: algorithms, reward services, training step, convergence.", no_args_is_help=True)


def register(app: typer.Typer) -> None:
    from botgrpo_cli.cli import bench_algos, bench_convergence, bench_eval, bench_results, bench_rewards, bench_rollout, bench_step

    for module in (bench_algos, bench_rewards, bench_rollout, bench_step, bench_convergence, bench_eval, bench_results):
        module.register(bench_app)
    app.add_typer(bench_app, name="bench", help="Benchmarks: algorithms, reward services, step time, convergence.")
