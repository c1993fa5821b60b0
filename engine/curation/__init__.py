"""Curation: from queued incidents to promoted signatures (queue, propose, backtest, promote)."""
