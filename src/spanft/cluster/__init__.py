"""The training stages fanned out to a SLURM job array (or local processes) and joined by DVC's run-cache.

``spanft fanout`` (:mod:`spanft.cluster.fanout`) asks DVC which training stages (fine-tuning runs, Table 3's
step costs) ``dvc repro`` would run (:mod:`spanft.cluster.stages`), runs their cheap upstream stages in the
head repo, and submits each stale training stage through submitit as one job (:mod:`spanft.cluster.job`): ``dvc repro --single-item STAGE`` in
a workspace of its own at the head's commit (:mod:`spanft.cluster.workspace`), against the head's DVC cache.
Each finished job leaves its outputs and a run-cache entry there; the head's ``dvc repro`` then restores every
run ("Stage ... is cached - skipping run") and builds the reports. Nothing here copies the graph: stages, their
upstream and their staleness all come from DVC.
"""
