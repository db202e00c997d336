"""graphrelease.dpsgd"""
