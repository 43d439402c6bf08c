"""The memvault service layer: API keys with scopes and tenants (:mod:`memvault.server.keys`).

Nothing here imports the web framework at package import time, so the key store and the
``memvault keys`` command work without the server's extras installed.
"""
