"""An example botgrpo plugin (docs/extending.md): task `keyword`, reward service `keyword`,
advantage estimator `mean_baseline`."""
