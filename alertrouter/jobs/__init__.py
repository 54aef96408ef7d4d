"""Jobs on GPUs: which workload an alert hits (`identity`), and what the Prometheus lookup says of pods
(`pods`). Pure: no store, no engine, no I/O."""
