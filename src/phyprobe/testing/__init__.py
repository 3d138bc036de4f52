"""Helpers for testing phyprobe and measuring it, shared by tests/, bench/ and the child processes tests start
(as numpy.testing or torch.testing): small real videos and manifests, tiny encoders and scorers, a scripted judge
server and a scripted prompt-suite server, the bad-input corpus, toy-size configs and a load client for ``phyprobe serve``.

The library never imports this package. Nothing is imported here: each module is imported by name, so a helper's
heavy dependencies (torch, av, hydra) load only when it is used.

- :mod:`phyprobe.testing.videos`: a moving square, a toy manifest of plausible and teleporting squares
- :mod:`phyprobe.testing.features`: a tiny seeded encoder, toy manifests and cache comparisons for feature caches
- :mod:`phyprobe.testing.scorers`: an exported scorer built in a second
- :mod:`phyprobe.testing.configs`: the real Hydra configs composed at toy size
- :mod:`phyprobe.testing.judge_server`: a scripted OpenAI-compatible chat-completions server on 127.0.0.1
- :mod:`phyprobe.testing.suite_server`: a scripted server playing the three prompt-suite agents
- :mod:`phyprobe.testing.judge_cases`: one small video per scripted server case, and a judge config for the server
- :mod:`phyprobe.testing.bad_inputs`: every bad input a hostile but realistic user can give
- :mod:`phyprobe.testing.serve_load`: concurrent uploads to ``phyprobe serve`` and a summary of the answers
"""
