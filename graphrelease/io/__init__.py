"""graphrelease.io"""
