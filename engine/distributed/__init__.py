"""Past one process: the scan fanned out, the evidence assembled and reasoned over once.

`fanout` splits the one scan into per-file work whose results are plain data (`codec`) and puts
them back together exactly; `local` runs it on a process pool (`denpex diagnose --workers`),
`celery_jobs` on Celery workers, and `bundles` carries a node's scanned evidence to the service.
"""
