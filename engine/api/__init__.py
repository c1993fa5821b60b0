"""The HTTP API for chatops bots: tenant-bound signed requests, one router per resource."""
