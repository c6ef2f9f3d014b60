import random
import string


# One random input for the question instance with parameter row l.
def input_generator(l, seed):
    if seed != 'default':
        random.seed(seed)
    i, j = l
    return [random.randint(-100, 100) for _ in range(random.randint(0, j + 5))]
