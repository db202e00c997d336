"""graphrelease.report"""
