import math


def mean_and_spread(values):
    total = 0.0
    
