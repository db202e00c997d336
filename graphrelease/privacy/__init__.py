"""graphrelease.privacy"""
