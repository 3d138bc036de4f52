"""What a manifest holds: counts by source, pair kind, correspondence and split, magnitude
histograms per source, and plots of the configured magnitude maps."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from ..magnitudes import MagnitudeMap
from ..manifest import Manifest


def count_tables(m: Manifest) -> dict[str, pd.DataFrame]:
    """Video and pair counts, each by source x split (and pairs by kind and correspondence too)."""
    v, p = m.videos, m.pairs
    return {
        "videos by source and split": v.groupby(["source", "split"]).size().unstack(fill_value=0),
        "videos by source (real / anchored / with magnitude)": v.groupby("source").agg(
            videos=("id", "size"), real=("is_real", "sum"), anchored=("anchor", lambda x: int(x.notna().sum())),
            with_magnitude=("magnitude", lambda x: int(x.notna().sum()))),
        "pairs by source and split": p.groupby(["source", "split"]).size().unstack(fill_value=0),
        "pairs by kind and correspondence": p.groupby(["kind", "correspondence"]).size().unstack(fill_value=0),
        "pairs by source and label": p.assign(label=np.select([p["label"] == 0.5, p["label"].isin([0.0, 1.0])],
                                                               ["tie", "hard"], "soft")).groupby(["source", "label"]).size().unstack(fill_value=0),
    }


def print_stats(m: Manifest) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    console.print(f"[bold]{m.root}[/bold]: {len(m.videos)} videos, {len(m.pairs)} pairs")
    for title, df in count_tables(m).items():
        t = Table(title=title)
        t.add_column(" / ".join(str(n) for n in df.index.names))
        for c in df.columns:
            t.add_column(str(c), justify="right")
        for idx, row in df.iterrows():
            t.add_row(str(idx), *(str(int(x)) for x in row))
        console.print(t)


def plot_stats(m: Manifest, out: Path) -> list[Path]:
    """Bar charts of the count tables and one magnitude histogram per source."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    files = []
    for title, df in count_tables(m).items():
        if df.empty:
            continue
        fig, ax = plt.subplots(figsize=(7, 3.5))
        df.plot.bar(ax=ax, stacked=True)
        ax.set_title(title)
        ax.set_ylabel("count")
        fig.tight_layout()
        files.append(out / (title.split(" (")[0].replace(" ", "_") + ".png"))
        fig.savefig(files[-1], dpi=100)
        plt.close(fig)
    mags = m.videos.dropna(subset=["magnitude"])
    sources = sorted(mags["source"].unique())
    if sources:
        fig, axes = plt.subplots(1, len(sources), figsize=(3.2 * len(sources), 2.8), squeeze=False)
        for ax, s in zip(axes[0], sources):
            ax.hist(mags.loc[mags["source"] == s, "magnitude"], bins=np.linspace(0, 1, 21))
            ax.set_title(s)
            ax.set_xlabel("magnitude")
        fig.tight_layout()
        files.append(out / "magnitude_histograms.png")
        fig.savefig(files[-1], dpi=100)
        plt.close(fig)
    return files


def plot_magnitude_maps(configs: Path, out: Path) -> Path:
    """Every ``configs/magnitudes/*.yaml`` map as annotation value -> magnitude, one panel per source."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    paths = sorted(Path(configs).glob("*.yaml"))
    if not paths:
        raise FileNotFoundError(f"{configs}: no magnitude maps (*.yaml)")
    fig, axes = plt.subplots(1, len(paths), figsize=(3.2 * len(paths), 2.8), squeeze=False)
    for ax, path in zip(axes[0], paths):
        mm = MagnitudeMap.from_dict(yaml.safe_load(path.read_text(encoding="utf-8")), where=str(path))
        for name, (x, y) in mm.points.items():
            xs = np.linspace(x[0], x[-1], 100)
            ax.plot(xs, mm.map_field(name, xs), label=name)
            ax.scatter(x, y, s=12)
        ax.set_title(path.stem)
        ax.set_ylim(-0.05, 1.05)
        ax.set_ylabel("magnitude")
        ax.legend(fontsize=7)
    fig.tight_layout()
    Path(out).mkdir(parents=True, exist_ok=True)
    target = Path(out) / "magnitude_maps.png"
    fig.savefig(target, dpi=100)
    plt.close(fig)
    return target
