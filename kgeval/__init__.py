"""kgeval: evaluation of text-to-SPARQL knowledge-graph question answering.

The flow (see DESIGN.md): holdout -> gold rebuild -> run -> judge -> results store -> report.
Each step is a sub-package named after it.
"""

__version__ = "0.1.0"
