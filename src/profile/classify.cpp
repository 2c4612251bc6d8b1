// Placeholder until the profiler's offline side lands.
