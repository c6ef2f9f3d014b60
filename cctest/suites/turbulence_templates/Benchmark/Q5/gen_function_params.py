import random
import string


# One random input for the question instance with parameter row l.
def input_generator(l, seed):
    if seed != 'default':
        random.seed(seed)
    i, j = l
    return ''.join(random.choices(string.ascii_letters + ' ', k=random.randint(0, j + 5)))
