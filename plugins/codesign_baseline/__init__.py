"""Calibrated baselines (GB200, GB300, B200, H200, H100): placeholder until issue 4 lands."""
