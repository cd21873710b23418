"""Deployment: the compose topology as local processes (deploy.local_cluster)."""
