"""The project's real Hydra configs composed as train.py and eval.py compose them, with toy-size overrides, for
tests and benchmarks that run a training or an evaluation in seconds (a source checkout: the configs/ folder)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

from hydra import compose, initialize_config_dir
from omegaconf import DictConfig, OmegaConf, open_dict

from phyprobe.config_files import SOURCE_ROOT

CONFIGS = SOURCE_ROOT / "configs"

TOY = [
    "backbone.image_size=64",
    "clip.num_frames=4",
    "trainer.max_epochs=2",
    "trainer.enable_progress_bar=false",
    "trainer.log_every_n_steps=1",
    "optim.batch_size=8",
    "extract.batch_size=8",
    "extract.num_workers=0",
]


def compose_train(tmp_path: Path, overrides: list[str], config_name: str = "train") -> DictConfig:
    """``backbone.image_size=N`` sizes whichever encoder the run builds: the backbone itself, the base encoder of
    a dynamics model fitted in the run (``fit.base``), the frame encoder of a trajectory encoder (``frames``), or
    each part of a ``concat``."""
    sizes = [o for o in overrides if o.startswith("backbone.image_size=")]
    scratch = _scratch_baselines(tmp_path, overrides) if config_name == "train" else []  # train_dynamics has none
    rest = [f"paths.output_dir={tmp_path}", *scratch]
    rest += [o for o in overrides if o not in sizes]
    with initialize_config_dir(version_base="1.3", config_dir=str(CONFIGS)):
        if sizes:
            backbone = compose(config_name, overrides=rest).backbone
            value = sizes[-1].split("=", 1)[1]
            nodes = (
                [(f"parts.{i}.", p) for i, p in enumerate(backbone.parts)] if "parts" in backbone else [("", backbone)]
            )
            sizes = [f"backbone.{prefix}{_sized(node)}image_size={value}" for prefix, node in nodes]
        return compose(config_name, overrides=[*rest, *sizes])


def _sized(node) -> str:
    """Where an encoder config's input size lives: its fitted base's, its frame encoder's, or its own."""
    return "fit.base." if "fit" in node else "frames." if "frames" in node else ""


def compose_eval(tmp_path: Path, overrides: list[str]) -> DictConfig:
    """eval.py's config writing into ``tmp_path``, with 200 bootstrap draws unless ``overrides`` say otherwise."""
    with initialize_config_dir(version_base="1.3", config_dir=str(CONFIGS)):
        scratch = _scratch_baselines(tmp_path, overrides)
        return compose("eval", overrides=[f"paths.output_dir={tmp_path}", "n_boot=200", *scratch, *overrides])


def _scratch_baselines(tmp_path: Path, overrides: list[str]) -> list[str]:
    """The pixel baselines' score cache beside the run (``<parent>/.baseline_cache``) unless ``overrides`` name one:
    the default, ``.cache/baselines`` under the working directory, would put a test's cache in the checkout."""
    if any(o.startswith("paths.baseline_cache_dir=") for o in overrides):
        return []
    return [f"paths.baseline_cache_dir={Path(tmp_path).parent / '.baseline_cache'}"]


def mix_train_cfg(
    tmp_path: Path,
    components: Mapping[str, str | Path],
    benchmarks: Mapping[str, str | Path] | Iterable[tuple[str, str | Path]],
    cache_dir: str | Path,
    extra: Iterable[str] = (),
) -> DictConfig:
    """train.py's ``data=paper_mix`` at toy size on converted manifests: ``components`` (name → manifest
    folder) each sampled with weight 1, checked for leakage against ``benchmarks`` (benchmark config name →
    manifest; pairs where one config serves several manifests), so a converter's output trains as the mix would.
    ``extra`` (e.g. ``backbone=efficientnet_lite0``) follows TOY."""
    cfg = compose_train(
        tmp_path,
        [
            *TOY,
            *extra,
            "data=paper_mix",
            f"paths.cache_dir={cache_dir}",
            "eval.n_boot=20",
            "eval.report=false",
            "eval.baselines=[]",
        ],
    )
    pairs = benchmarks.items() if isinstance(benchmarks, Mapping) else benchmarks
    with open_dict(cfg):
        cfg.data.source.components = {k: str(v) for k, v in components.items()}
        cfg.data.source.leakage.benchmarks = [
            {**OmegaConf.to_container(OmegaConf.load(CONFIGS / "benchmark" / f"{b}.yaml")), "manifest": str(p)}
            for b, p in pairs
        ]
        cfg.data.sampling.source = {k: 1.0 for k in components}
    return cfg


def benchmark_eval_cfg(
    tmp_path: Path,
    benchmark: str,
    manifest: str | Path,
    run_dir: str | Path | None = None,
    cache_dir: str | Path | None = None,
    extra: Iterable[str] = (),
) -> DictConfig:
    """eval.py's config for ``benchmark`` on a converted ``manifest`` at toy size (20 bootstrap draws, no
    report, extraction in-process); ``run_dir`` scores with a trained run, or ``extra`` names another scorer."""
    run = [f"run={run_dir}"] if run_dir is not None else []
    cache = [f"paths.cache_dir={cache_dir}"] if cache_dir is not None else []
    return compose_eval(
        tmp_path,
        [
            f"benchmark={benchmark}",
            f"benchmark.manifest={manifest}",
            *run,
            *cache,
            "n_boot=20",
            "report=false",
            "extract.num_workers=0",
            *extra,
        ],
    )
