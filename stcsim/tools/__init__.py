"""Developer tools: engine speed (`invoke bench`), A/B of engine builds, perf profiles, the profile-guided
build's training launches, the sampler's error per layer, the stats reference; they may use anything."""
