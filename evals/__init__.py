"""Evaluation material for denpex: a failure corpus with ground-truth labels and its generator."""
