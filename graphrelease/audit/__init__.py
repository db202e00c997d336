"""graphrelease.audit"""
