"""Fleet-scale analysis: many host captures analysed where they lie, one Dask task per capture
(``engine``), small per-capture results cached beside the captures (``cache``) and combined into
one ranked report of the fleet."""
