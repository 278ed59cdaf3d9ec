console.log('hello from the sample collection');
