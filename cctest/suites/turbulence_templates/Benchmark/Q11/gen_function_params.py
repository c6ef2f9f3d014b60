import random
import string


# One random input for the question instance with parameter row l.
def input_generator(l, seed):
    if seed != 'default':
        random.seed(seed)
    i, j = l
    return [random.randint(i - 20, j + 20) for _ in range(random.randint(0, 25))]
