"""The graph `%jaxpr` draws, as plain data: what it is (`model`), how a traced jaxpr
becomes one (`build`, with `sites`, `groups` and `repeats` settling the call tree's
groups), and what each drawing makes of it: the passes in `passes`, in order (`repeats`'
fold, `lanes`, `ends`' records, `collapse`, `coarsen`, the touches), and the automatic
depth (`auto_depth`). Nothing here draws: `render/` does, from these graphs alone.
"""



